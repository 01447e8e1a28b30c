//! What an ImagePolicy reads of the cluster: its repository from the shared watch cache (as
//! Flux reads it), namespaces and Secrets live.

use super::decide::PolicyReader;
use crate::api::ImageRepository;
use crate::controller::frame::context::ApiReader;
use crate::controller::lookup::api_read::{read_named, ReadError};
use crate::controller::lookup::credentials::ObjectReader;
use crate::controller::object::cache::ObjectCache;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use kube::{Api, ResourceExt};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Repositories from the watch cache (as Flux reads them), namespaces and Secrets live.
pub struct ClusterReader {
    pub api: ApiReader,
    pub repositories: Arc<ObjectCache<ImageRepository>>,
}

impl ObjectReader for ClusterReader {
    async fn secret(&self, namespace: &str, name: &str) -> Result<Option<Secret>, ReadError> {
        self.api.secret(namespace, name).await
    }

    async fn service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ServiceAccount>, ReadError> {
        self.api.service_account(namespace, name).await
    }

    fn service_account_source(
        &self,
        namespace: &str,
        name: &str,
    ) -> std::sync::Arc<dyn crate::registry::cloud::ServiceAccountSource> {
        self.api.service_account_source(namespace, name)
    }
}

impl PolicyReader for ClusterReader {
    async fn image_repository(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ImageRepository>, ReadError> {
        Ok(self.repositories.get(namespace, name))
    }

    async fn namespace_labels(
        &self,
        namespace: &str,
    ) -> Result<Option<BTreeMap<String, String>>, ReadError> {
        crate::api::check_namespace_name(namespace).map_err(|why| ReadError::InvalidName {
            kind: "namespace",
            name: namespace.into(),
            why,
        })?;
        let api = Api::<Namespace>::all(self.api.0.clone());
        read_named(namespace, api.get_opt(namespace))
            .await
            .map(|ns| ns.map(|ns| ns.labels().clone()))
    }
}
