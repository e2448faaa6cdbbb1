//! Start-up: what any front end needs before it drives an engine — the configuration turned
//! into what the engine asks for (`models`).

pub mod models;
