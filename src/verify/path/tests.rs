//! Paths through hostile pools: what is found, at what count of signature checks, and what
//! webpki then says.

use super::*;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

/// 2026-01-01, inside every certificate's validity here.
const AT: u64 = 1_767_225_600;

fn params(name: &str, ca: bool) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, name);
    params.not_before = rcgen::date_time_ymd(2025, 1, 1);
    params.not_after = rcgen::date_time_ymd(2027, 1, 1);
    if ca {
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    }
    params
}

/// A CA named `name` with its own key, certified by `by` (itself when `None`).
struct Ca {
    der: Vec<u8>,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(name: &str, by: Option<&Ca>) -> Ca {
    ca_with(params(name, true), KeyPair::generate().unwrap(), by)
}

fn ca_with(params: CertificateParams, key: KeyPair, by: Option<&Ca>) -> Ca {
    let der = match by {
        Some(parent) => params.signed_by(&key, &parent.issuer),
        None => params.self_signed(&key),
    };
    Ca {
        der: der.unwrap().der().to_vec(),
        issuer: Issuer::new(params, key),
    }
}

fn leaf(by: &Ca) -> Vec<u8> {
    let params = params("leaf", false);
    let key = KeyPair::generate().unwrap();
    params.signed_by(&key, &by.issuer).unwrap().der().to_vec()
}

fn time() -> UnixTime {
    UnixTime::since_unix_epoch(std::time::Duration::from_secs(AT))
}

/// The paths found from `leaf` to `anchor` through `pool` (as places in it), and the
/// signature checks spent.
fn search(leaf: &[u8], anchor: &[u8], pool: &Pool) -> (Vec<Vec<usize>>, usize) {
    let (leaf, anchor) = (parse(leaf).unwrap(), parse(anchor).unwrap());
    let budget = Budget::default();
    let mut search = Search {
        leaf: &leaf,
        anchor: &anchor,
        pools: &[pool],
        at: AT as i64,
        budget: &budget,
        paths: Vec::new(),
    };
    search.extend(&mut Vec::new());
    let places = search.paths.iter().map(|p| p.iter().map(|s| s.1).collect());
    (places.collect(), MAX_SIGNATURE_CHECKS - budget.checks.get())
}

fn verified(leaf_der: &[u8], anchor: &[u8], pool: &Pool) -> Result<(), webpki::Error> {
    verified_within(leaf_der, anchor, &[pool], &Budget::default())
}

fn verified_within(
    leaf_der: &[u8],
    anchor: &[u8],
    pools: &[&Pool],
    budget: &Budget,
) -> Result<(), webpki::Error> {
    let der = CertificateDer::from(leaf_der);
    let end_entity = webpki::EndEntityCert::try_from(&der).unwrap();
    let verification = Verification {
        time: time(),
        usage: Usage {
            oid: &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03],
            arcs: &[1, 3, 6, 1, 5, 5, 7, 3, 3],
        },
        pools,
        budget,
    };
    verify(
        &end_entity,
        leaf_der,
        &CertificateDer::from(anchor),
        &verification,
    )
}

#[test]
fn a_real_chain_is_found_among_same_named_decoys_each_checked_once() {
    let root = ca("root", None);
    let middle = ca("middle", Some(&root));
    let issuing = ca("issuing", Some(&middle));
    let leaf = leaf(&issuing);
    // Decoys of every name on the path, with their own keys, listed before the real ones.
    let decoys: Vec<Ca> = ["issuing", "middle", "issuing", "middle"]
        .iter()
        .map(|name| ca(name, None))
        .collect();
    let mut ders: Vec<&[u8]> = decoys.iter().map(|d| d.der.as_slice()).collect();
    ders.extend([issuing.der.as_slice(), middle.der.as_slice()]);
    let pool = Pool::new(ders);
    let (paths, checks) = search(&leaf, &root.der, &pool);
    assert_eq!(paths.len(), 1, "the one real path");
    // Three candidates named `issuing`, then three named `middle`, then the anchor.
    assert_eq!(checks, 7);
    assert_eq!(verified(&leaf, &root.der, &pool), Ok(()));
    // Without the middle certificate there is no path, and webpki is not asked.
    let pool = Pool::new([issuing.der.as_slice()]);
    assert_eq!(
        verified(&leaf, &root.der, &pool),
        Err(webpki::Error::UnknownIssuer)
    );
}

#[test]
fn many_same_named_issuers_of_each_other_cost_at_most_the_budget() {
    // The hostile shape: certificates all named as the leaf's issuer and issued by that name,
    // each a candidate issuer of every other, and an anchor they never reach.
    let anchor = ca("anchor", None);
    let name = ca("shared", None);
    let leaf = leaf(&name);
    let mut hostile: Vec<Ca> = Vec::new();
    for i in 0..40 {
        let by = hostile.get(i / 2);
        hostile.push(ca_with(
            params("shared", true),
            KeyPair::generate().unwrap(),
            by,
        ));
    }
    let pool = Pool::new(hostile.iter().map(|c| c.der.as_slice()));
    let (paths, checks) = search(&leaf, &anchor.der, &pool);
    assert!(paths.is_empty());
    assert_eq!(
        checks, MAX_SIGNATURE_CHECKS,
        "the leaf's candidates spend the budget"
    );
    assert_eq!(
        verified(&leaf, &anchor.der, &pool),
        Err(webpki::Error::MaximumSignatureChecksExceeded)
    );
    // Fewer than the budget: each is checked, and nothing is found.
    let pool = Pool::new(hostile[..20].iter().map(|c| c.der.as_slice()));
    assert_eq!(search(&leaf, &anchor.der, &pool), (Vec::new(), 20));
    assert_eq!(
        verified(&leaf, &anchor.der, &pool),
        Err(webpki::Error::UnknownIssuer)
    );
}

#[test]
fn a_real_issuer_beyond_the_budget_is_not_found_as_go_refuses_it() {
    let root = ca("root", None);
    let leaf = leaf(&root);
    let hidden = ca("root", None);
    let leaf_of_hidden = leaf_signed(&hidden);
    let decoys: Vec<Ca> = (0..MAX_SIGNATURE_CHECKS + 1)
        .map(|_| ca("root", None))
        .collect();
    let mut ders: Vec<&[u8]> = decoys.iter().map(|d| d.der.as_slice()).collect();
    ders.push(&hidden.der);
    let pool = Pool::new(ders);
    // The anchor is asked first: found whatever the pool holds.
    assert_eq!(verified(&leaf, &root.der, &pool), Ok(()));
    // Through the pool, the real issuer comes after the budget.
    assert_eq!(
        verified(&leaf_of_hidden, &root.der, &pool),
        Err(webpki::Error::MaximumSignatureChecksExceeded)
    );
}

fn leaf_signed(by: &Ca) -> Vec<u8> {
    leaf(by)
}

#[test]
fn twins_of_one_ca_are_each_tried_and_an_expired_one_does_not_hide_a_valid_one() {
    let root = ca("root", None);
    let key = KeyPair::generate().unwrap();
    let der = key.serialize_der();
    let mut expired = params("issuing", true);
    expired.not_after = rcgen::date_time_ymd(2025, 6, 1);
    let expired = ca_with(
        expired,
        KeyPair::try_from(der.as_slice()).unwrap(),
        Some(&root),
    );
    let current = ca_with(params("issuing", true), key, Some(&root));
    let leaf = leaf(&current);
    let pool = Pool::new([expired.der.as_slice(), current.der.as_slice()]);
    let (paths, _) = search(&leaf, &root.der, &pool);
    assert_eq!(
        paths,
        vec![vec![1]],
        "the expired twin is no candidate at the time"
    );
    assert_eq!(verified(&leaf, &root.der, &pool), Ok(()));
}

#[test]
fn webpki_still_judges_the_path_found() {
    // A path of names and signatures whose middle certificate is no CA: found here, refused by
    // webpki.
    let root = ca("root", None);
    let not_ca = ca_with(
        params("issuing", false),
        KeyPair::generate().unwrap(),
        Some(&root),
    );
    let leaf = leaf(&not_ca);
    let pool = Pool::new([not_ca.der.as_slice()]);
    assert_eq!(search(&leaf, &root.der, &pool).0.len(), 1);
    assert_eq!(
        verified(&leaf, &root.der, &pool),
        Err(webpki::Error::EndEntityUsedAsCa)
    );
}

#[test]
fn a_path_is_at_most_six_intermediates_long() {
    let root = ca("c7", None);
    let mut chain = vec![root];
    for depth in (0..7).rev() {
        let next = ca(&format!("c{depth}"), chain.last());
        chain.push(next);
    }
    let leaf = leaf(chain.last().unwrap());
    let pool = Pool::new(chain[1..].iter().map(|c| c.der.as_slice()));
    assert!(search(&leaf, &chain[0].der, &pool).0.is_empty());
    let pool = Pool::new(chain[2..].iter().map(|c| c.der.as_slice()));
    let shorter = leaf_signed(chain.last().unwrap());
    assert!(search(&shorter, &chain[1].der, &pool).0.len() == 1);
}

#[test]
fn what_does_not_parse_is_in_no_pool() {
    let pool = Pool::new([b"not a certificate".as_slice(), &[0x30, 0x00]]);
    assert!(pool.certs.is_empty());
    let root = ca("root", None);
    let twice = Pool::new([root.der.as_slice(), root.der.as_slice()]);
    assert_eq!(twice.certs.len(), 1);
}

#[test]
fn one_budget_across_pools_and_verifications_each_verdict_checked_once() {
    let root = ca("root", None);
    let issuing = ca("issuing", Some(&root));
    let leaf = leaf(&issuing);
    let decoys: Vec<Ca> = (0..8).map(|_| ca("issuing", Some(&root))).collect();
    let carried = Pool::new(decoys.iter().map(|d| d.der.as_slice()));
    let own = Pool::new([issuing.der.as_slice()]);
    let budget = Budget::default();
    // The carried pool first: 8 checks fail, then the authority's issuer, then the anchor.
    assert_eq!(
        verified_within(&leaf, &root.der, &[&carried, &own], &budget),
        Ok(())
    );
    assert_eq!(budget.checks.get(), MAX_SIGNATURE_CHECKS - 10);
    // Again, at another time or for another authority: every verdict is known.
    assert_eq!(
        verified_within(&leaf, &root.der, &[&carried, &own], &budget),
        Ok(())
    );
    assert_eq!(budget.checks.get(), MAX_SIGNATURE_CHECKS - 10);
    assert_eq!(budget.steps.get(), MAX_STEPS - 20);
    // Other leaves of other decoys spend the rest, and then nothing is found.
    let others: Vec<Ca> = (0..3).map(|_| ca("issuing", Some(&root))).collect();
    let mut verdicts = Vec::new();
    for other in &others {
        let leaf = leaf_signed(other);
        verdicts.push(verified_within(
            &leaf,
            &root.der,
            &[&carried, &own],
            &budget,
        ));
    }
    assert_eq!(verdicts[0], Err(webpki::Error::UnknownIssuer));
    assert_eq!(
        verdicts[2],
        Err(webpki::Error::MaximumSignatureChecksExceeded)
    );
    assert!(budget.spent());
    // Spent, even the leaf the budget knew is refused: nothing more is looked at.
    assert_eq!(
        verified_within(&leaf, &root.der, &[&carried, &own], &budget),
        Err(webpki::Error::MaximumSignatureChecksExceeded)
    );
}

#[test]
fn candidates_looked_at_are_bounded_when_every_verdict_is_known() {
    // Twins of one CA (one key, other serial numbers) on every level: each verdict is one
    // check, but every ordering of the twins is a path to look at.
    let root = ca("root", None);
    let mut levels: Vec<Vec<Ca>> = Vec::new();
    let mut parent_key: Option<(CertificateParams, KeyPair)> = None;
    for level in 0..5 {
        let name = format!("level {level}");
        let key = KeyPair::generate().unwrap();
        let twins = (0..6u8)
            .map(|serial| {
                let mut p = params(&name, true);
                p.serial_number = Some(rcgen::SerialNumber::from(vec![serial + 1]));
                let der = match &parent_key {
                    Some((pp, pk)) => p.signed_by(&key, &Issuer::from_params(pp, pk)),
                    None => p.signed_by(&key, &root.issuer),
                };
                Ca {
                    der: der.unwrap().der().to_vec(),
                    issuer: Issuer::new(
                        p,
                        KeyPair::try_from(key.serialize_der().as_slice()).unwrap(),
                    ),
                }
            })
            .collect();
        parent_key = Some((params(&name, true), key));
        levels.push(twins);
    }
    let leaf = leaf(&levels[4][0]);
    let pool = Pool::new(levels.iter().flatten().map(|c| c.der.as_slice()));
    let budget = Budget::default();
    // An anchor that signed none of them: every path is looked at, within the steps.
    let other = ca("root", None);
    assert_eq!(
        verified_within(&leaf, &other.der, &[&pool], &budget),
        Err(webpki::Error::MaximumSignatureChecksExceeded)
    );
    assert_eq!(budget.steps.get(), 0);
    // At most one check per certificate and issuing key: the leaf, then six twins a level.
    assert!(MAX_SIGNATURE_CHECKS - budget.checks.get() <= 1 + 5 * 6);
}

#[test]
fn usages_are_read_as_go_reads_them_none_the_purpose_or_any() {
    use rcgen::ExtendedKeyUsagePurpose as Purpose;
    let root = ca("root", None);
    for (purposes, allowed) in [
        (vec![], true),
        (vec![Purpose::CodeSigning], true),
        (vec![Purpose::Any], true),
        (vec![Purpose::ServerAuth, Purpose::Any], true),
        (vec![Purpose::ServerAuth], false),
    ] {
        let mut params = params("issuing", true);
        params.extended_key_usages = purposes.clone();
        let issuing = ca_with(params, KeyPair::generate().unwrap(), Some(&root));
        let leaf = leaf(&issuing);
        let verdict = verified(&leaf, &root.der, &Pool::new([issuing.der.as_slice()]));
        match allowed {
            true => assert_eq!(verdict, Ok(()), "{purposes:?}"),
            false => assert!(
                matches!(verdict, Err(webpki::Error::RequiredEkuNotFoundContext(_))),
                "{purposes:?}: {verdict:?}"
            ),
        }
    }
}

#[test]
fn a_pool_shows_its_certificates_in_order_and_says_how_many() {
    let (a, b) = (ca("a", None), ca("b", None));
    let pool = Pool::new([a.der.as_slice(), b.der.as_slice(), a.der.as_slice()]);
    // The SCT check reads an authority's intermediates through this.
    let ders: Vec<&[u8]> = pool.ders().collect();
    assert_eq!(ders, [a.der.as_slice(), b.der.as_slice()]);
    // A trusted root is logged with its pools: their size, not their bytes.
    assert_eq!(format!("{pool:?}"), "Pool(2 certificates)");
}

#[test]
fn at_most_eight_paths_are_handed_to_webpki_and_the_leaf_is_never_its_own_issuer() {
    // Ten twins of a CA that may not sign certificates (no CA): ten paths of names and
    // signatures, each refused by webpki; eight are looked at.
    let root = ca("root", None);
    let key = KeyPair::generate().unwrap();
    let der = key.serialize_der();
    let twins: Vec<Ca> = (0..10u8)
        .map(|serial| {
            let mut p = params("issuing", false);
            p.serial_number = Some(rcgen::SerialNumber::from(vec![serial + 1]));
            ca_with(p, KeyPair::try_from(der.as_slice()).unwrap(), Some(&root))
        })
        .collect();
    let leaf = leaf(&twins[0]);
    let pool = Pool::new(twins.iter().map(|c| c.der.as_slice()));
    assert_eq!(search(&leaf, &root.der, &pool).0.len(), MAX_PATHS);
    // A twin of the leaf itself (its name and key) is no candidate issuer of it.
    let leaf_key = KeyPair::generate().unwrap();
    let named = |serial: u8| {
        let mut p = params("issuing", true);
        p.serial_number = Some(rcgen::SerialNumber::from(vec![serial]));
        p
    };
    let issuing = ca_with(named(1), KeyPair::generate().unwrap(), Some(&root));
    let own = named(2).signed_by(&leaf_key, &issuing.issuer).unwrap();
    let twin = named(3).signed_by(&leaf_key, &issuing.issuer).unwrap();
    let pool = Pool::new([twin.der().as_ref(), issuing.der.as_slice()]);
    // The issuer's signature, then the anchor's: the twin is not checked.
    assert_eq!(search(own.der(), &root.der, &pool), (vec![vec![1]], 2));
}
