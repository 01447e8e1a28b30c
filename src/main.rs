use clap::{Parser, Subcommand};
use image_reflector::cli::{self, CliError};
use std::process::ExitCode;

/// A drop-in replacement for Flux's image-reflector-controller.
#[derive(Parser)]
#[command(name = "image-reflector", version = image_reflector::telemetry::build::DESCRIPTION, about)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the ImageRepository and ImagePolicy CustomResourceDefinitions as YAML (or, with
    /// --patches, as kustomize patches of Flux's).
    Crds(cli::crds::CrdsArgs),
    /// Elect the latest tag from a list, as an ImagePolicy would.
    Select(cli::select::SelectArgs),
    /// Evaluate a policy's attestation conditions on a sample statement or predicate, as the
    /// verify gate does once the attestation verified (nothing is verified here).
    Conditions(cli::conditions::ConditionsArgs),
    /// Parse an image as `spec.image` is parsed: canonical name and scheme, no network call.
    Ref(cli::reference::RefArgs),
    /// List a repository's tags, as an ImageRepository scan does.
    Tags(cli::registry::TagsArgs),
    /// Print the digest a tag points at, as an ImagePolicy's digest reflection does.
    Digest(cli::registry::DigestArgs),
    /// Run the controller against the cluster in KUBECONFIG (or in-cluster).
    Run(Box<cli::run::RunArgs>),
    /// Reconcile the ImageRepositories, then the ImagePolicies, of some manifests offline (the
    /// controller's own reconciles) and print their status.
    Scan(cli::scan::ScanArgs),
    /// The tag store: `store archive` writes it as a tar archive, for `scan --storage-path`.
    Store(cli::store::StoreArgs),
}

/// Flux's Deployment passes its flags with no subcommand (its image's entrypoint is the
/// controller): arguments that start with a flag other than help or version mean `run`.
fn with_default_subcommand(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let first = args.get(1).and_then(|a| a.to_str()).unwrap_or_default();
    let meta = ["-h", "--help", "-V", "--version"];
    if first.starts_with('-') && !meta.contains(&first) {
        args.insert(1, "run".into());
    }
    args
}

fn main() -> ExitCode {
    cli::allocator::limit_malloc_arenas();
    let args = Args::parse_from(with_default_subcommand(std::env::args_os().collect()));
    let mut stdout = std::io::stdout().lock();
    let result = match args.command {
        Command::Crds(a) => cli::crds::run(&a, &mut stdout).map_err(CliError::failed),
        Command::Select(a) => cli::select::run(&a, &mut stdout),
        Command::Conditions(a) => cli::conditions::run(&a, &mut stdout),
        Command::Ref(a) => cli::reference::run(&a, &mut stdout),
        Command::Tags(a) => cli::registry::run_tags(&a, &mut stdout),
        Command::Digest(a) => cli::registry::run_digest(&a, &mut stdout),
        Command::Run(a) => cli::run::run(&a),
        Command::Scan(a) => cli::scan::run(&a, &mut stdout),
        Command::Store(a) => cli::store::run(&a, &mut stdout),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(err.code)
        }
    }
}
