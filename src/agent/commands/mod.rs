//! Executing engine commands (`protocol::command::Command`): `Agent::execute` takes each
//! one, does it, and answers with its `Outcome`; the submodules hold the operations that
//! front ends used to write themselves.

pub mod models;
