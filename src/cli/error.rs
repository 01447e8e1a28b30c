//! Errors of the subcommands, each with the exit code it maps to.

use std::fmt;

/// A subcommand failure: the message for stderr and the process exit code.
#[derive(Debug)]
pub struct CliError {
    pub code: u8,
    pub message: String,
}

impl CliError {
    /// Exit 1: the command ran but found nothing (e.g. no tag elected).
    pub fn not_found(message: impl fmt::Display) -> Self {
        CliError {
            code: 1,
            message: message.to_string(),
        }
    }

    /// Exit 1 from `run`: the controller had to stop (its leader Lease was lost), as Flux's
    /// controller-runtime exits; the Deployment restarts the Pod.
    pub fn stopped(message: impl fmt::Display) -> Self {
        CliError {
            code: 1,
            message: message.to_string(),
        }
    }

    /// Exit 2: the input is invalid (manifest, policy, regex, reference, flags).
    pub fn invalid(message: impl fmt::Display) -> Self {
        CliError {
            code: 2,
            message: message.to_string(),
        }
    }

    /// Exit 3: the environment failed (I/O, network, registry).
    pub fn failed(message: impl fmt::Display) -> Self {
        CliError {
            code: 3,
            message: message.to_string(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// Reads a file, or standard input for `-`.
pub fn read_input(path: &str) -> Result<String, CliError> {
    use std::io::Read;
    if path == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| CliError::failed(format!("reading standard input: {e}")))?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(|e| CliError::invalid(format!("reading {path}: {e}")))
}
