//! `image-reflector crds`: prints both CustomResourceDefinitions as YAML (with `--beyond-flux`,
//! the paths of ours that Flux's lack), or, with `--patches`,
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
    /// With --patches: first a JSON patch that sets the image of Flux's
    /// image-reflector-controller Deployment to this one (`registry/path@sha256:...` or
    /// `registry/path:tag`), as a FluxInstance needs both (docs/install.md).
    #[arg(long, requires = "patches", value_parser = parse_image)]
    pub image: Option<String>,
    /// Print the admission's VerifiedDigests CRD instead (config/admission/crd.yaml).
    #[arg(long, conflicts_with = "patches")]
    pub admission: bool,
    /// Print the paths of our ImagePolicy CRD that Flux's lacks, one a line
    /// (`ImagePolicy.spec.verify`): what a schema comparison with Flux's should allow.
    #[arg(long, conflicts_with_all = ["patches", "admission"])]
    pub beyond_flux: bool,
}

/// The image kustomize would write as the container's: a tag or a digest (a release always
/// pins one), read as `spec.image` and ggcr read them.
fn parse_image(image: &str) -> Result<String, String> {
    crate::reference::ImageReference::parse_pinned(image)
        .map(|_| image.to_string())
        .map_err(|e| e.to_string())
}

/// Writes both CRDs to `out`.
pub fn run(args: &CrdsArgs, out: &mut impl Write) -> anyhow::Result<()> {
    if args.beyond_flux {
        for path in crate::api::beyond_flux_paths() {
            writeln!(out, "{path}")?;
        }
        return Ok(());
    }
    if args.admission {
        out.write_all(crate::api::verified_digests_yaml()?.as_bytes())?;
        return Ok(());
    }
    if !args.patches {
        out.write_all(crate::api::crds_yaml()?.as_bytes())?;
        return Ok(());
    }
    let mut patches = Vec::new();
    if let Some(image) = &args.image {
        let op = json!([{
            "op": "replace",
            "path": "/spec/template/spec/containers/0/image",
            "value": image,
        }]);
        patches.push(json!({
            "target": {"kind": "Deployment", "name": "image-reflector-controller"},
            "patch": serde_saphyr::to_string(&op)?,
        }));
    }
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
        run(
            &CrdsArgs {
                patches: true,
                ..Default::default()
            },
            &mut out,
        )
        .unwrap();
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

    /// With --image, the first patch sets the Deployment's image; the CRDs follow unchanged.
    #[test]
    fn an_image_comes_first_as_a_json_patch_of_the_deployment() {
        let image =
            "registry.example.com/platform/image-reflector@sha256:".to_string() + &"ab".repeat(32);
        let mut out = Vec::new();
        let args = CrdsArgs {
            patches: true,
            image: Some(parse_image(&image).unwrap()),
            ..Default::default()
        };
        run(&args, &mut out).unwrap();
        let patches: Vec<serde_json::Value> =
            serde_saphyr::from_str(std::str::from_utf8(&out).unwrap()).unwrap();
        assert_eq!(patches.len(), crate::api::crds().len() + 1);
        assert_eq!(
            patches[0]["target"],
            json!({"kind": "Deployment", "name": "image-reflector-controller"})
        );
        let op: serde_json::Value =
            serde_saphyr::from_str(patches[0]["patch"].as_str().unwrap()).unwrap();
        assert_eq!(
            op,
            json!([{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": image}])
        );
        assert_eq!(patches[1]["target"]["kind"], "CustomResourceDefinition");
    }

    /// An image without a tag or digest would pull `latest`: refused, saying what to give; so
    /// are a bad tag, a short digest and a repository `spec.image` would refuse.
    #[test]
    fn an_image_needs_a_tag_or_a_digest() {
        let err = parse_image("registry.example.com:5000/platform/image-reflector").unwrap_err();
        assert!(
            err.contains("name a tag (registry/path:v1.0.0) or a digest"),
            "{err}"
        );
        assert!(parse_image("registry.example.com:5000/platform/image-reflector:v0.1.0").is_ok());
        assert!(parse_image("UPPER/case:1").is_err());
        assert!(parse_image("registry.example.com/image-reflector:v0 1").is_err());
        assert!(parse_image("registry.example.com/image-reflector@sha256:abc").is_err());
    }
}
