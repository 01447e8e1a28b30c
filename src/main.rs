use clap::{Parser, Subcommand};
use image_reflector::cli;
use std::process::ExitCode;

/// A drop-in replacement for Flux's image-reflector-controller.
#[derive(Parser)]
#[command(name = "image-reflector", version, about)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the ImageRepository and ImagePolicy CustomResourceDefinitions as YAML.
    Crds,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match args.command {
        Command::Crds => cli::crds::run(&mut std::io::stdout().lock()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
