//! Certificates that share one name, for the hostile path-building cases (issue 70): the oracle's
//! `families` and `cargo bench --bench gates`'s "hostile trusted root" make them here.

use cms::cert::CertificateChoices;
use cms::content_info::ContentInfo;
use cms::signed_data::{CertificateSet, SignedData};
use rcgen::{BasicConstraints, CertificateParams, DnType, DnValue, IsCa, Issuer, KeyPair};
use x509_cert::der::{Decode, Encode};

/// The names a hostile certificate bears: the Rekor v2 fixture's timestamp authority's
/// intermediate (printable strings, as the real one), or its Fulcio CA (UTF-8).
#[derive(Clone, Copy)]
pub enum Name {
    TsaIntermediate,
    FulcioRoot,
}

fn params(name: Name) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    let printable = |s: &str| DnValue::PrintableString(s.try_into().unwrap());
    match name {
        Name::TsaIntermediate => {
            params
                .distinguished_name
                .push(DnType::OrganizationName, printable("local"));
            params
                .distinguished_name
                .push(DnType::CommonName, printable("Test TSA Intermediate"));
        }
        Name::FulcioRoot => params.distinguished_name.push(DnType::CommonName, "testca"),
    }
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2040, 1, 1);
    params
}

/// `count` CAs of one name, each issued by an earlier one (the first by itself), each with its
/// own key: candidates of one another, none the real issuer.
pub fn same_named(name: Name, count: usize) -> Vec<Vec<u8>> {
    let mut issuers: Vec<Issuer<'static, KeyPair>> = Vec::new();
    let mut ders = Vec::new();
    for i in 0..count {
        let key = KeyPair::generate().unwrap();
        let der = match issuers.get(i / 2) {
            Some(by) => params(name).signed_by(&key, by),
            None => params(name).self_signed(&key),
        };
        ders.push(der.unwrap().der().to_vec());
        issuers.push(Issuer::new(params(name), key));
    }
    ders
}

/// A self-signed root of its own name.
pub fn anchor(i: usize) -> Vec<u8> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, format!("tenant root {i}"));
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().der().to_vec()
}

/// The RFC 3161 response `der` with `certificates` added to its token (they are not signed).
pub fn carrying(der: &[u8], certificates: &[Vec<u8>]) -> Vec<u8> {
    let mut response = x509_tsp::TimeStampResp::from_der(der).unwrap();
    let token = response.time_stamp_token.as_mut().unwrap();
    let mut data: SignedData = token.content.decode_as().unwrap();
    let mut all: Vec<CertificateChoices> = data
        .certificates
        .map(|set| set.0.into_vec())
        .unwrap_or_default();
    all.extend(
        certificates
            .iter()
            .map(|c| CertificateChoices::Certificate(x509_cert::Certificate::from_der(c).unwrap())),
    );
    data.certificates = Some(CertificateSet(all.try_into().unwrap()));
    *token = ContentInfo {
        content_type: token.content_type,
        content: x509_cert::der::Any::encode_from(&data).unwrap(),
    };
    response.to_der().unwrap()
}
