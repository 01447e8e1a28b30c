//! `image-reflector crds`: prints both CustomResourceDefinitions as YAML.

use std::io::Write;

/// Writes both CRDs to `out`.
pub fn run(out: &mut impl Write) -> anyhow::Result<()> {
    out.write_all(crate::api::crds_yaml()?.as_bytes())?;
    Ok(())
}
