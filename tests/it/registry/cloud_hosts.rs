//! The provider host rules against `tests/data/provider-hosts.jsonl` (Flux's own test hosts as
//! data, and ours at the edges).

use image_reflector::registry::cloud::{
    registry_target, CloudError, CloudProvider, RegistryTarget,
};

#[test]
fn provider_host_rules_match_fluxs_tables() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/provider-hosts.jsonl"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut checked = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        let field = |k: &str| case[k].as_str().unwrap().to_string();
        let provider = match field("provider").as_str() {
            "aws" => CloudProvider::Aws,
            "azure" => CloudProvider::Azure,
            "gcp" => CloudProvider::Gcp,
            other => panic!("unknown provider {other}"),
        };
        let repository = field("repository");
        let host = repository.split('/').next().unwrap();
        let got = registry_target(provider, host);
        let expect = field("expect");
        match (expect.split_once(':'), &got) {
            (Some(("region", region)), Ok(RegistryTarget::Ecr { region: r })) => {
                assert_eq!(r, region, "{line}")
            }
            (Some(("acr", scope)), Ok(RegistryTarget::Acr { scope: s, host: h })) => {
                assert_eq!((*s, h.as_str()), (scope, host), "{line}")
            }
            (None, Ok(RegistryTarget::EcrPublic)) if expect == "public" => {
                assert_eq!(RegistryTarget::EcrPublic.aws_region(), "us-east-1")
            }
            (None, Ok(RegistryTarget::Gcp)) if expect == "gcp" => {}
            (None, Err(message)) if expect == "invalid" => {
                let name = match provider {
                    CloudProvider::Aws => "AWS",
                    CloudProvider::Azure => "Azure",
                    CloudProvider::Gcp => "GCP",
                };
                let prefix = format!("invalid {name} registry: '{host}'. must match ^");
                // The host is the object's to fix: a setting, not the provider's answer.
                let CloudError::Settings(message) = message else {
                    panic!("{line}: {message:?}")
                };
                assert!(message.starts_with(&prefix), "{line}: {message}");
            }
            _ => panic!("{line}: got {got:?}"),
        }
        checked += 1;
    }
    assert!(checked >= 39, "only {checked} cases read");
}
