use super::*;

/// Go's answers (time.Parse(time.RFC3339) after cel-go's strict check, and
/// time.ParseDuration), each written down from Go's documented grammar.
#[test]
fn timestamps_read_as_cel_go_reads_them() {
    let at = |s: &str| parse_timestamp(s).map(|t| (t.seconds, t.nanos));
    assert_eq!(at("1970-01-01T00:00:00Z"), Ok((0, 0)));
    assert_eq!(at("2026-12-01T00:00:00Z"), Ok((1_796_083_200, 0)));
    assert_eq!(at("2026-12-01T02:00:00+02:00"), Ok((1_796_083_200, 0)));
    assert_eq!(
        at("2026-11-30T23:00:00.5-01:00"),
        Ok((1_796_083_200, 500_000_000))
    );
    assert_eq!(at("0001-01-01T00:00:00Z"), Ok((MIN_UNIX, 0)));
    assert_eq!(
        at("9999-12-31T23:59:59.999999999Z"),
        Ok((MAX_UNIX, 999_999_999))
    );
    assert_eq!(at("2024-02-29T00:00:00Z").map(|t| t.0), Ok(1_709_164_800));
    assert_eq!(at("1970-01-01T00:00:00.1234567891Z"), Ok((0, 123_456_789)));
    for bad in [
        "2026-12-01T00:00:00",
        "2026-12-01 00:00:00Z",
        "2026-02-30T00:00:00Z",
        "2100-02-29T00:00:00Z",
        "2026-12-01T24:00:00Z",
        "2026-12-01T00:60:00Z",
        "2026-12-01T00:00:60Z",
        "2026-12-01T00:00:00.Z",
        "2026-12-01t00:00:00Z",
        "2026-12-01T00:00:00z",
        "2026-12-01T00:00:00+24:00",
        "2026-12-01T00:00:00+0200",
        "0000-12-31T00:00:00Z",
        "+2026-12-01T00:00:00Z",
        "2026-12-1T00:00:00Z",
        "",
    ] {
        assert!(at(bad).is_err(), "{bad}");
    }
}

#[test]
fn timestamps_write_and_read_back_in_utc() {
    let t = parse_timestamp("2026-11-30T12:00:00.250+02:00").unwrap();
    assert_eq!(format_timestamp(t), "2026-11-30T12:00:00.25+02:00");
    let later = t.add(3_600 * NANOS).unwrap();
    assert_eq!(format_timestamp(later), "2026-11-30T13:00:00.25+02:00");
    assert_eq!(later.since(t), Ok(3_600 * NANOS));
    let west = parse_timestamp("2026-11-30T12:00:00-00:30").unwrap();
    assert_eq!(format_timestamp(west), "2026-11-30T12:00:00-00:30");
    assert_eq!(
        format_timestamp(parse_timestamp("2026-11-30T12:00:00+00:00").unwrap()),
        "2026-11-30T12:00:00Z"
    );
    assert_eq!(
        format_timestamp(Timestamp::new(MIN_UNIX, 0).unwrap()),
        "0001-01-01T00:00:00Z"
    );
    // 2026-11-30 is a Monday, day 333 of its year (0-based), in month 10 (0-based).
    let names = [
        "getFullYear",
        "getMonth",
        "getDayOfYear",
        "getDayOfMonth",
        "getDate",
        "getDayOfWeek",
        "getHours",
        "getMilliseconds",
    ];
    let got: Vec<i64> = names.iter().map(|n| accessor(n, t).unwrap()).collect();
    assert_eq!(got, [2026, 10, 333, 29, 30, 1, 10, 250]);
    assert_eq!(t.add(-NANOS).unwrap().seconds, t.seconds - 1);
    assert!(Timestamp::new(MAX_UNIX, 0).unwrap().add(NANOS).is_err());
    assert!(Timestamp::new(MIN_UNIX, 0).unwrap().add(-1).is_err());
}

#[test]
fn durations_read_as_go_reads_them() {
    let h = 3_600_000_000_000i64;
    let cases: [(&str, Option<i64>); 22] = [
        ("0", Some(0)),
        ("-0", Some(0)),
        ("1h", Some(h)),
        ("+1h", Some(h)),
        ("-1h", Some(-h)),
        ("1.5h", Some(h + h / 2)),
        ("1h30m", Some(h + h / 2)),
        (".5s", Some(500_000_000)),
        ("5.s", Some(5_000_000_000)),
        ("1µs", Some(1000)),
        ("1μs", Some(1000)),
        ("1us", Some(1000)),
        ("2562047h47m16.854775807s", Some(i64::MAX)),
        ("-2562047h47m16.854775808s", Some(i64::MIN)),
        ("2562047h47m16.854775808s", None),
        ("1h7d", None),
        ("1d", None),
        ("", None),
        ("1", None),
        (".s", None),
        ("1h ", None),
        ("9223372036854775808ns", None),
    ];
    for (text, want) in cases {
        assert_eq!(parse_duration(text).ok(), want, "{text}");
    }
    assert_eq!(format_duration(h + h / 2), "5400s");
    assert_eq!(format_duration(1), "0.000000001s");
    assert_eq!(format_duration(-1_500_000_000), "-1.5s");
    assert_eq!(duration_accessor("getHours", h + h / 2), Some(1));
    assert_eq!(duration_accessor("getMinutes", h + h / 2), Some(90));
    assert_eq!(
        duration_accessor("getMilliseconds", -1_500_000_000),
        Some(-1500)
    );
}
