//! `AuthError`: what can go wrong signing in or reading credentials, each with a message a
//! user can act on (the provider or server named, the command that fixes it).

#[derive(Clone, Debug, thiserror::Error)]
pub enum AuthError {
    /// The credential store could not be read or written.
    #[error("{0}")]
    Store(String),
    /// A sign-in flow failed (the server said no, the user gave up, it timed out).
    #[error("{0}")]
    Flow(String),
    /// The stored sign-in cannot be used any more and renewing it failed: sign in again.
    #[error(
        "the sign-in for {what} expired or was revoked and could not be renewed ({why}): sign in again: {command}"
    )]
    SignInAgain {
        what: String,
        why: String,
        command: String,
    },
    /// The authorization server could not be reached or answered something unreadable.
    #[error("{0}")]
    Network(String),
}

impl AuthError {
    pub fn store(message: impl Into<String>) -> AuthError {
        AuthError::Store(message.into())
    }

    pub fn flow(message: impl Into<String>) -> AuthError {
        AuthError::Flow(message.into())
    }
}
