//! `image-reflector tags` and `image-reflector digest`: the controller's two registry calls,
//! for people debugging a registry (like `crane ls` / `crane digest`). Same client, same
//! settings as an ImageRepository: `--insecure`, a docker config, a CA, a client certificate,
//! a proxy, a timeout.
//!
//! Exit codes: 0 done, 2 invalid input (image, regex, settings), 3 the registry call failed.

use super::error::CliError;
use super::Output;
use crate::api::parse_go_duration;
use crate::policy::compile_exclusions;
use crate::reference::ImageReference;
use crate::registry::cloud::{CloudLogin, CloudProvider};
use crate::registry::{
    ClientOptions, Fixes, Keyring, ProxySettings, Registries, RegistryClient, RegistryError,
    SchedulerConfig, TlsMaterial,
};
use std::io::Write;
use std::time::Duration;

/// How to reach the registry (shared by `tags` and `digest`).
#[derive(clap::Args, Debug)]
pub struct ConnectArgs {
    /// As `spec.insecure`: plain HTTP.
    #[arg(long)]
    pub insecure: bool,
    /// A docker config JSON file (`{"auths": {...}}`, what a `.dockerconfigjson` Secret holds).
    #[arg(long, value_name = "FILE")]
    pub docker_config: Option<String>,
    /// A PEM CA to trust besides the system roots (`ca.crt` of a certSecretRef).
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<String>,
    /// A PEM client certificate for mTLS (`tls.crt`); needs --key-file.
    #[arg(long, value_name = "FILE")]
    pub cert_file: Option<String>,
    /// The client certificate's PEM private key (`tls.key`).
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<String>,
    /// Proxy URL (http, https or socks5; user:password@ allowed). Default: HTTPS_PROXY/NO_PROXY.
    #[arg(long, value_name = "URL")]
    pub proxy: Option<String>,
    /// Per-request timeout, a Go duration.
    #[arg(long, default_value = "60s", value_parser = parse_go_duration)]
    pub timeout: Duration,
    /// As `spec.provider`: log in with this machine's cloud identity (the environment, instance
    /// metadata, workload identity) instead of a docker config.
    #[arg(long, value_enum, default_value_t = ProviderArg::Generic)]
    pub provider: ProviderArg,
}

/// `--provider`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderArg {
    Generic,
    Aws,
    Azure,
    Gcp,
}

/// Options of `tags`.
#[derive(clap::Args, Debug)]
pub struct TagsArgs {
    /// The image, as in `spec.image` (no tag).
    pub image: String,
    /// Drop tags this regular expression finds (repeatable), as `spec.exclusionList`.
    #[arg(long = "exclude", value_name = "REGEX")]
    pub exclude: Vec<String>,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Options of `digest`.
#[derive(clap::Args, Debug)]
pub struct DigestArgs {
    /// `<image>:<tag>`.
    pub image: String,
    #[command(flatten)]
    pub connect: ConnectArgs,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Runs `tags`.
pub fn run_tags(args: &TagsArgs, out: &mut impl Write) -> Result<(), CliError> {
    // Flux's scan-failure text for a bad exclusionList entry.
    // The condition's text is Flux's (`failed to compile regex <p>: ...`); on the command line
    // the pattern is quoted, so that one with spaces or brackets reads as one.
    let exclusions = compile_exclusions(&args.exclude).map_err(|err| {
        let quoted = args.exclude.iter().fold(err, |text, p| {
            text.replacen(
                &format!("failed to compile regex {p}: "),
                &format!("--exclude '{p}' does not compile: "),
                1,
            )
        });
        CliError::invalid(quoted)
    })?;
    let image =
        ImageReference::parse(&args.image, args.connect.insecure).map_err(CliError::invalid)?;
    let client = client(&args.connect, &image)?;
    let listing = runtime()?
        .block_on(client.list_tags_with(&image, move |t| !exclusions.excludes(t)))
        .map_err(registry_error)?;
    let written = match args.output {
        Output::Text => listing.tags.iter().try_for_each(|t| writeln!(out, "{t}")),
        Output::Json => writeln!(
            out,
            "{}",
            serde_json::json!({
                "canonical": image.canonical(),
                "tags": listing.tags.iter().collect::<Vec<_>>(),
                "listed": listing.listed,
                "requests": listing.requests,
            })
        ),
    };
    written.map_err(|e| CliError::failed(format!("writing output: {e}")))
}

/// Runs `digest`.
pub fn run_digest(args: &DigestArgs, out: &mut impl Write) -> Result<(), CliError> {
    let (name, tag) = split_tag(&args.image).ok_or_else(|| {
        CliError::invalid(format!(
            "'{}' has no tag: digest needs <image>:<tag>",
            args.image
        ))
    })?;
    let image = ImageReference::parse(name, args.connect.insecure).map_err(CliError::invalid)?;
    let client = client(&args.connect, &image)?;
    let digest = runtime()?
        .block_on(client.digest(&image, tag))
        .map_err(registry_error)?;
    let written = match args.output {
        Output::Text => writeln!(out, "{digest}"),
        Output::Json => writeln!(
            out,
            "{}",
            serde_json::json!({ "canonical": image.canonical(), "tag": tag, "digest": digest })
        ),
    };
    written.map_err(|e| CliError::failed(format!("writing output: {e}")))
}

/// `registry:5000/app:1.0` → (`registry:5000/app`, `1.0`): the tag follows the last `:` after
/// the last `/`.
fn split_tag(image: &str) -> Option<(&str, &str)> {
    let (name, tag) = image.rsplit_once(':')?;
    (!tag.contains('/') && !tag.is_empty()).then_some((name, tag))
}

fn client(args: &ConnectArgs, image: &ImageReference) -> Result<RegistryClient, CliError> {
    let login = match args.provider {
        ProviderArg::Generic => None,
        ProviderArg::Aws => Some(CloudLogin::new(CloudProvider::Aws)),
        ProviderArg::Azure => Some(CloudLogin::new(CloudProvider::Azure)),
        ProviderArg::Gcp => Some(CloudLogin::new(CloudProvider::Gcp)),
    };
    if let (Some(login), Some(_)) = (&login, &args.docker_config) {
        return Err(CliError::invalid(format!(
            "--docker-config is not used with --provider {}: the provider's login gives the \
             credentials (as spec.secretRef is ignored for it); drop one of the two",
            login.provider
        )));
    }
    let proxy = args
        .proxy
        .as_deref()
        .map(ProxySettings::parse)
        .transpose()
        .map_err(|e| CliError::invalid(format!("--proxy: {e}")))?;
    let options = ClientOptions {
        credentials: credentials(args, image)?,
        login,
        tls: tls(args)?,
        proxy,
        timeout: args.timeout,
        fixes: &FLAG_FIXES,
        ..Default::default()
    };
    RegistryClient::new(options, Registries::new(SchedulerConfig::default()))
        .map_err(CliError::invalid)
}

fn read(path: &str) -> Result<Vec<u8>, CliError> {
    std::fs::read(path).map_err(|e| CliError::invalid(format!("reading {path}: {e}")))
}

/// `--docker-config`'s entry for `image`, if any.
fn credentials(
    args: &ConnectArgs,
    image: &ImageReference,
) -> Result<Option<crate::registry::Credentials>, CliError> {
    let Some(path) = &args.docker_config else {
        return Ok(None);
    };
    let mut keyring = Keyring::new();
    keyring
        .add_config_json(&read(path)?)
        .map_err(|e| CliError::invalid(format!("--docker-config {path}: {e}")))?;
    let found = keyring.lookup(&image.canonical()).cloned();
    if found.is_none() {
        // Not an error (the controller goes anonymous too), but rarely what was meant.
        eprintln!(
            "warning: no entry of {path} matches {}; going anonymous",
            image.canonical()
        );
    }
    Ok(found)
}

/// `--ca-file`, `--cert-file` and `--key-file`, when any is given: a certificate needs its key.
fn tls(args: &ConnectArgs) -> Result<Option<TlsMaterial>, CliError> {
    match (&args.cert_file, &args.key_file) {
        (Some(_), None) => {
            return Err(CliError::invalid(
                "missing private key: --cert-file needs --key-file (the client certificate's key)",
            ))
        }
        (None, Some(_)) => {
            return Err(CliError::invalid(
                "missing certificate: --key-file needs --cert-file (the client certificate)",
            ))
        }
        _ => {}
    }
    if args.ca_file.is_none() && args.cert_file.is_none() {
        return Ok(None);
    }
    let load = |p: &Option<String>| p.as_deref().map(read).transpose();
    let (ca, cert, key) = (
        load(&args.ca_file)?,
        load(&args.cert_file)?,
        load(&args.key_file)?,
    );
    let flags = match (&args.ca_file, &args.cert_file) {
        (Some(_), Some(_)) => "--ca-file, --cert-file and --key-file",
        (Some(_), None) => "--ca-file",
        _ => "--cert-file and --key-file",
    };
    let material = TlsMaterial::new(ca.as_deref(), cert.as_deref(), key.as_deref());
    material
        .map(Some)
        .map_err(|e| CliError::invalid(format!("{e}: check {flags}")))
}

/// Registry errors from `tags` and `digest` name these commands' flags.
static FLAG_FIXES: Fixes = Fixes {
    image: "the image argument",
    transport: "check the image host, --ca-file (TLS) and --proxy (default: HTTPS_PROXY/NO_PROXY)",
    proxy: "check --proxy: its address, and that the proxy is running",
    tls: "check --ca-file: it must hold the CA that signed the registry's certificate; \
          --cert-file/--key-file a client certificate it accepts",
    timeout: "--timeout",
    credentials: "--docker-config",
    give_credentials: "pass --docker-config, a docker config file with an entry for {host}",
};

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(format!("starting the async runtime: {e}")))
}

fn registry_error(err: RegistryError) -> CliError {
    match err {
        RegistryError::Config(e) => CliError::invalid(e),
        err @ RegistryError::InvalidTag(_) => CliError::invalid(err),
        other => CliError::failed(other),
    }
}

#[cfg(test)]
mod tests {
    use super::{split_tag, FLAG_FIXES};
    use crate::registry::RegistryError;

    #[test]
    fn registry_errors_name_the_flags() {
        let err = RegistryError::Timeout {
            method: "GET",
            url: "https://r.example/v2/".into(),
            host: "r.example".into(),
            timeout: std::time::Duration::from_secs(5),
            fixes: &FLAG_FIXES,
        };
        assert!(
            err.to_string()
                .ends_with("did not answer within 5s; raise --timeout or check the registry"),
            "{err}"
        );
    }

    #[test]
    fn splits_the_tag_after_the_last_slash() {
        assert_eq!(split_tag("alpine:3.20"), Some(("alpine", "3.20")));
        assert_eq!(
            split_tag("localhost:5000/app:1.0"),
            Some(("localhost:5000/app", "1.0"))
        );
        assert_eq!(split_tag("localhost:5000/app"), None);
        assert_eq!(split_tag("app:"), None);
    }
}
