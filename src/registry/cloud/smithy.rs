//! The AWS SDK's HTTP client, played by ours: every AWS request (STS, ECR, instance metadata,
//! EKS Pod Identity) goes through [`CloudHttp`], so it uses ring as the one TLS provider, the
//! object's proxy and CA, and the per-host scheduler, instead of a second HTTP stack.

use super::http::CloudHttp;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::Response;
use aws_smithy_types::body::SdkBody;
use reqwest::Method;

#[derive(Clone, Debug)]
struct Connector(CloudHttp);

/// The SDK client for `http`.
pub(super) fn client(http: &CloudHttp) -> SharedHttpClient {
    SharedHttpClient::new(Connector(http.clone()))
}

impl HttpClient for Connector {
    fn http_connector(
        &self,
        _settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        // Timeouts are the client's own (the object's spec.timeout).
        SharedHttpConnector::new(self.clone())
    }
}

impl HttpConnector for Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let http = self.0.clone();
        HttpConnectorFuture::new(async move {
            let method = Method::from_bytes(request.method().as_bytes())
                .map_err(|e| ConnectorError::other(e.into(), None))?;
            let mut builder = http
                .request(method, request.uri())
                .map_err(|e| ConnectorError::other(e.into(), None))?;
            for (name, value) in request.headers() {
                builder = builder.header(name, value);
            }
            // The SDK's requests here have small in-memory bodies (forms and JSON).
            let body = request.body().bytes().unwrap_or_default().to_vec();
            let answer = http
                .send(builder.body(body))
                .await
                .map_err(|e| ConnectorError::io(e.into()))?;
            let mut response = http::Response::builder().status(answer.status.as_u16());
            for (name, value) in &answer.headers {
                response = response.header(name, value);
            }
            let response = response
                .body(SdkBody::from(answer.body))
                .map_err(|e| ConnectorError::other(e.into(), None))?;
            Response::try_from(response).map_err(|e| ConnectorError::other(e.into(), None))
        })
    }
}
