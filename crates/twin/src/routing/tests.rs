use super::*;

const NONE: RouteKey<'static> = RouteKey {
    session: None,
    api_key: None,
    cached_blocks: &[],
};

#[test]
fn names_parse_back_and_unknown_names_list_the_valid_ones() {
    for p in RouterPolicy::ALL {
        assert_eq!(p.name().parse::<RouterPolicy>(), Ok(p));
    }
    let err = "random".parse::<RouterPolicy>().expect_err("unknown");
    assert!(err.contains("\"random\""), "{err}");
    assert!(
        err.contains("round-robin, least-loaded, power-of-two, session, prefix-aware"),
        "{err}"
    );
}

#[test]
fn round_robin_cycles_through_the_replicas() {
    let mut r = Router::new(RouterPolicy::RoundRobin, 7, 0);
    let picks: Vec<usize> = (0..7).map(|_| r.pick(&[5, 0, 9], &NONE)).collect();
    assert_eq!(picks, vec![0, 1, 2, 0, 1, 2, 0]);
}

#[test]
fn least_loaded_takes_the_fewest_in_flight_and_the_lower_index_on_ties() {
    assert_eq!(least_loaded(&[3, 1, 1, 2]), 1);
    assert_eq!(least_loaded(&[0, 0]), 0);
    assert_eq!(least_loaded(&[4]), 0);
    let mut r = Router::new(RouterPolicy::LeastLoaded, 1, 0);
    assert_eq!(r.pick(&[2, 2, 1], &NONE), 2);
}

#[test]
fn power_of_two_is_seeded_distinct_and_prefers_the_less_loaded() {
    assert_eq!(power_of_two(&[5, 2], 0, 1), 1);
    assert_eq!(power_of_two(&[2, 2], 1, 0), 1);
    let mut s = 42;
    for _ in 0..1000 {
        let (a, b) = draw_two(&mut s, 4);
        assert!(a != b && a < 4 && b < 4);
    }
    let draws = |seed| {
        let mut r = Router::new(RouterPolicy::PowerOfTwo, seed, 0);
        (0..64).map(|_| r.pick(&[0; 4], &NONE)).collect::<Vec<_>>()
    };
    assert_eq!(draws(3), draws(3));
    assert_ne!(draws(3), draws(4));
    // The most loaded replica is never chosen: it always loses its draw.
    let mut r = Router::new(RouterPolicy::PowerOfTwo, 9, 0);
    assert!((0..500).all(|_| r.pick(&[1, 1, 9, 1], &NONE) != 2));
    // All four get work when loads are equal.
    let mut seen = [0usize; 4];
    for i in draws(5) {
        seen[i] += 1;
    }
    assert!(seen.iter().all(|c| *c > 0), "{seen:?}");
}

#[test]
fn session_hashes_the_session_then_the_key_then_goes_round_robin() {
    let mut r = Router::new(RouterPolicy::Session, 0, 0);
    let key = |s: Option<&'static str>, k: Option<&'static str>| RouteKey {
        session: s,
        api_key: k,
        cached_blocks: &[],
    };
    let loads = [0usize; 4];
    let a = r.pick(&loads, &key(Some("ses_a"), Some("k1")));
    for _ in 0..20 {
        assert_eq!(r.pick(&[9, 0, 3, 1], &key(Some("ses_a"), Some("k2"))), a);
    }
    let by_key = r.pick(&loads, &key(None, Some("k1")));
    assert_eq!(by_key, jump_hash(key_hash("k1"), 4));
    let rr: Vec<usize> = (0..4).map(|_| r.pick(&loads, &key(None, None))).collect();
    assert_eq!(rr, vec![0, 1, 2, 3]);
    // Many sessions spread over every replica.
    let mut seen = [0usize; 4];
    for i in 0..400 {
        seen[jump_hash(key_hash(&format!("ses_{i}")), 4)] += 1;
    }
    assert!(seen.iter().all(|c| *c > 60), "{seen:?}");
}

#[test]
fn jump_hash_is_consistent_when_the_fleet_grows() {
    let keys: Vec<u64> = (0..2000).map(|i| key_hash(&format!("s{i}"))).collect();
    let moved = keys
        .iter()
        .filter(|k| jump_hash(**k, 4) != jump_hash(**k, 5))
        .count();
    // About 1/5 of the keys move to the new replica, none between old ones.
    assert!((300..500).contains(&moved), "{moved}");
    for k in &keys {
        let (before, after) = (jump_hash(*k, 4), jump_hash(*k, 5));
        assert!(after == before || after == 4);
    }
    assert_eq!(jump_hash(123, 1), 0);
    assert_eq!(jump_hash(123, 0), 0);
}

#[test]
fn prefix_aware_follows_the_cache_unless_it_is_overloaded() {
    assert_eq!(prefix_choice(&[0, 12, 3], &[0, 4, 0], 4), 1);
    assert_eq!(prefix_choice(&[0, 12, 3], &[0, 5, 0], 4), 0);
    assert_eq!(prefix_choice(&[0, 0, 0], &[3, 1, 2], 4), 1);
    assert_eq!(prefix_choice(&[5, 5], &[1, 1], 0), 0);
    assert_eq!(prefix_choice(&[], &[2, 1], 0), 1);
    let mut r = Router::new(RouterPolicy::PrefixAware, 0, 2);
    let key = RouteKey {
        cached_blocks: &[1, 0, 7],
        ..NONE
    };
    assert_eq!(r.pick(&[0, 0, 2], &key), 2);
    assert_eq!(r.pick(&[0, 0, 3], &key), 0);
}
