//! `image-reflector crds`: prints both CustomResourceDefinitions as YAML, or, with `--patches`,
//! as kustomize patches that put them over Flux's (docs/install.md): a list of `{target,
//! patch}` entries, the shape of a Kustomization's `patches:` and of a flux-operator
//! `FluxInstance`'s `spec.kustomize.patches`. A strategic merge patch of a whole CRD: the
//! versions list has no merge key, so ours replaces Flux's whole, schema and all.

use serde_json::json;
use std::io::Write;

#[derive(clap::Args, Debug, Default)]
pub struct CrdsArgs {
    /// Print the CRDs as kustomize patches of Flux's (for `patches:` or a FluxInstance's
    /// `spec.kustomize.patches`) instead of as objects.
    #[arg(long)]
    pub patches: bool,
}

/// Writes both CRDs to `out`.
pub fn run(args: &CrdsArgs, out: &mut impl Write) -> anyhow::Result<()> {
    if !args.patches {
        out.write_all(crate::api::crds_yaml()?.as_bytes())?;
        return Ok(());
    }
    let mut patches = Vec::new();
    for crd in crate::api::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        patches.push(json!({
            "target": {"kind": "CustomResourceDefinition", "name": name},
            "patch": serde_saphyr::to_string(&crd)?,
        }));
    }
    out.write_all(serde_saphyr::to_string(&patches)?.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The patches name each CRD and carry it whole, as YAML that reads back as the CRD.
    #[test]
    fn the_patches_target_each_crd_and_carry_it_whole() {
        let mut out = Vec::new();
        run(&CrdsArgs { patches: true }, &mut out).unwrap();
        let patches: Vec<serde_json::Value> =
            serde_saphyr::from_str(std::str::from_utf8(&out).unwrap()).unwrap();
        let crds = crate::api::crds();
        assert_eq!(patches.len(), crds.len());
        for (patch, crd) in patches.iter().zip(&crds) {
            assert_eq!(patch["target"]["kind"], "CustomResourceDefinition");
            assert_eq!(patch["target"]["name"], crd.metadata.name.clone().unwrap());
            let carried: serde_json::Value =
                serde_saphyr::from_str(patch["patch"].as_str().unwrap()).unwrap();
            assert_eq!(carried, serde_json::to_value(crd).unwrap());
        }
    }
}
