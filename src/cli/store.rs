//! `image-reflector store archive`: the tag store as a tar archive on standard output, so the
//! offline tools can read the controller's own clocks (docs/scan.md, "The controller's clocks").
//! The image has no shell and no `tar`, so `kubectl cp` cannot copy its store; this can:
//! `kubectl exec <pod> -- image-reflector store archive > data.tar`.

use super::error::CliError;
use std::io::Write;
use std::path::PathBuf;

/// Options of `store`.
#[derive(clap::Args, Debug)]
pub struct StoreArgs {
    #[command(subcommand)]
    pub command: StoreCommand,
}

/// What `store` does.
#[derive(clap::Subcommand, Debug)]
pub enum StoreCommand {
    /// Write the store's files as a tar archive to standard output (symbolic links are not
    /// followed); extract it and pass the directory to `scan --storage-path`.
    Archive {
        /// The store's directory, as `run --storage-path` names it.
        #[arg(long, default_value = "/data", value_name = "DIR")]
        storage_path: PathBuf,
    },
}

/// Runs `store`, writing to `out`.
pub fn run(args: &StoreArgs, out: impl Write) -> Result<(), CliError> {
    match &args.command {
        StoreCommand::Archive { storage_path } => archive(storage_path, out),
    }
}

fn archive(path: &PathBuf, out: impl Write) -> Result<(), CliError> {
    if !path.is_dir() {
        return Err(CliError::invalid(format!(
            "{} is not a directory: name the store with --storage-path (the controller's is \
             /data)",
            path.display()
        )));
    }
    let failed = |e: std::io::Error| {
        CliError::failed(format!("archiving the store at {}: {e}", path.display()))
    };
    let mut tar = tar::Builder::new(out);
    tar.follow_symlinks(false);
    tar.mode(tar::HeaderMode::Deterministic);
    tar.append_dir_all(".", path).map_err(failed)?;
    tar.into_inner().map_err(failed)?.flush().map_err(failed)
}
