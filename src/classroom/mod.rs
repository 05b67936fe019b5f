//! The classroom simulation: N students, each working on a small
//! client-server chat project with an OpenCode-like agent, against a real
//! model reached through a [`crate::openai::Transport`].
//!
//! The model's output and the server load are real; the file system, the
//! builds and the students are simulated.

mod buildlog;
pub mod scenario;
pub mod shell;
mod shell_files;
pub mod tools;
pub mod workspace;

#[cfg(test)]
mod tools_tests;
