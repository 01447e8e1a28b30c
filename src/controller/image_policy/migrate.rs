//! Migration of the deprecated ImagePolicy status fields (docs/compatibility.md), run before any other
//! change and written as its own patch: `latestImage` / `observedPreviousImage` (`name:tag`)
//! become `latestRef` / `observedPreviousRef` where those are absent, and are removed.

use crate::api::{ImagePolicyStatus, ImageRef};

/// The migrated status, when there is anything to migrate.
pub fn migrate_status(status: &ImagePolicyStatus) -> Option<ImagePolicyStatus> {
    if status.latest_image.is_none() && status.observed_previous_image.is_none() {
        return None;
    }
    let mut migrated = status.clone();
    if migrated.latest_ref.is_none() {
        migrated.latest_ref = status.latest_image.as_deref().and_then(split_ref);
    }
    if migrated.observed_previous_ref.is_none() {
        migrated.observed_previous_ref = status
            .observed_previous_image
            .as_deref()
            .and_then(split_ref)
            .map(Box::new);
    }
    migrated.latest_image = None;
    migrated.observed_previous_image = None;
    Some(migrated)
}

/// `name:tag` split at the last `:` (after the last `/`, so a registry port is not a tag);
/// a value without a tag is invalid: logged and dropped.
fn split_ref(image: &str) -> Option<ImageRef> {
    let split = image
        .rsplit_once(':')
        .filter(|(name, tag)| !name.is_empty() && !tag.is_empty() && !tag.contains('/'));
    match split {
        Some((name, tag)) => Some(ImageRef {
            name: name.to_string(),
            tag: tag.to_string(),
            digest: None,
        }),
        None => {
            tracing::warn!(value = %image, "dropping a deprecated status image without a tag");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(name: &str, tag: &str) -> ImageRef {
        ImageRef {
            name: name.into(),
            tag: tag.into(),
            digest: None,
        }
    }

    #[test]
    fn moves_deprecated_fields_into_refs() {
        let old = ImagePolicyStatus {
            latest_image: Some("registry:5000/team/app:1.2.0".into()),
            observed_previous_image: Some("registry:5000/team/app:1.1.0".into()),
            ..Default::default()
        };
        let new = migrate_status(&old).unwrap();
        assert_eq!(new.latest_ref, Some(r("registry:5000/team/app", "1.2.0")));
        assert_eq!(
            new.observed_previous_ref.as_deref(),
            Some(&r("registry:5000/team/app", "1.1.0"))
        );
        assert_eq!(
            (new.latest_image, new.observed_previous_image),
            (None, None)
        );
    }

    #[test]
    fn keeps_existing_refs_and_drops_values_without_a_tag() {
        let old = ImagePolicyStatus {
            latest_ref: Some(r("a/b", "2.0.0")),
            latest_image: Some("a/b:1.0.0".into()),
            observed_previous_image: Some("registry:5000/a/b".into()),
            ..Default::default()
        };
        let new = migrate_status(&old).unwrap();
        assert_eq!(
            new.latest_ref,
            Some(r("a/b", "2.0.0")),
            "an existing ref wins"
        );
        assert_eq!(new.observed_previous_ref, None, "no tag: dropped");
        assert_eq!(migrate_status(&new), None, "nothing left to migrate");
        assert_eq!(migrate_status(&ImagePolicyStatus::default()), None);
    }
}
