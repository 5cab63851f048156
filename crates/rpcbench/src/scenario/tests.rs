//! Tests of reading scenarios: good files, and mistakes named by `file:line:col`.

use super::*;

mod file_tests {
    use super::*;

    const GOOD: &str = r#"
thresholds = ["p99 < 500ms", "getBlock: errors < 1%"]

[target]
url = "http://127.0.0.1:8899/"
headers = { "X-Test" = "1" }
timeout = "2s"

[load]
rate = "500/s"
arrivals = "poisson"
duration = "3s"
seed = 9

[generators]
slot = { range = [100, 200] }
account = { choice = ["A", "B"] }

[[call]]
method = "getBlock"
params = ["{slot}", { encoding = "json", rewards = false }]
weight = 3

[[call]]
name = "balance"
method = "getBalance"
params = ["{account}"]
"#;

    #[test]
    fn a_good_scenario_becomes_a_run_configuration() {
        let scenario = Scenario::parse(GOOD, Path::new("good.toml")).unwrap();
        let config = &scenario.config;
        assert!(config.validate().is_ok());
        assert_eq!(
            config.load,
            Load::Open { rate: 500.0, arrivals: Arrivals::Poisson, max_connections: 1024 }
        );
        assert_eq!(config.length.duration, Some(Duration::from_secs(3)));
        assert_eq!(config.timeout, Duration::from_secs(2));
        assert_eq!(config.seed, 9);
        assert_eq!(config.headers, vec![("X-Test".to_string(), "1".to_string())]);
        let names: Vec<&str> = config.workload.calls().iter().map(|c| c.name()).collect();
        assert_eq!(names, ["getBlock", "balance"]);
        assert_eq!(config.workload.calls()[0].weight(), 3);
        assert_eq!(scenario.thresholds.len(), 2);
        assert_eq!(scenario.thresholds[1].scope(), Some("getBlock"));
    }

    #[test]
    fn a_scenario_names_the_error_codes_its_provider_rate_limits_with() {
        let text = "rate_limit_codes = [-32099, 1015]\n[target]\nurl = \"http://127.0.0.1:8899/\"\n[[call]]\nmethod = \"getSlot\"\n";
        let scenario = Scenario::parse(text, Path::new("s.toml")).unwrap();
        let codes = scenario.config.rate_limits.codes();
        assert!(codes.contains(&-32099) && codes.contains(&1015), "{codes:?}");
        // The built-in ones stay.
        assert!(codes.contains(&-32029), "{codes:?}");
        assert!(error_of("rate_limit_codes = \"x\"\n[[call]]\nmethod = \"getSlot\"\n").contains("s.toml:1:"));
    }

    fn error_of(text: &str) -> String {
        Scenario::parse(text, Path::new("s.toml")).unwrap_err().to_string()
    }

    #[test]
    fn a_threshold_fault_in_a_scenario_is_named_by_its_character_column() {
        let base = "[target]\nurl = \"http://127.0.0.1:1/\"\n[[call]]\nmethod = \"getSlot\"\n";
        // `µ` is two bytes but one character: the column counts characters, as --threshold does.
        let error = error_of(&format!("thresholds = [\"µ: p99 < soon\"]\n{base}"));
        assert!(error.starts_with("s.toml:1:25: threshold: the limit 'soon' is not a duration"), "{error}");
        // A string written with escapes is not the text parsed: the error names its start.
        let error = error_of(&format!("thresholds = [\"p99 \\u003c soon\"]\n{base}"));
        assert!(error.starts_with("s.toml:1:15: threshold: the limit 'soon'"), "{error}");
    }

    #[test]
    fn mistakes_are_reported_with_file_line_and_column() {
        let base = "[target]\nurl = \"http://127.0.0.1:1/\"\n";
        let call = "[[call]]\nmethod = \"getSlot\"\n";
        let cases = [
            (format!("{base}[load]\nconections = 5\n{call}"), "s.toml:4:1:", "unknown field `conections`"),
            (format!("{base}[load]\nduration = \"10x\"\n{call}"), "s.toml:4:12:", "expected a duration"),
            (format!("{base}[load]\nconnections = 0\n{call}"), "s.toml:4:15:", "at least 1"),
            (
                format!("{base}[load]\nconnections = 5\nrate = 10\nmax_connections = 8\n{call}"),
                "s.toml:4:15:",
                "not both",
            ),
            (format!("{base}{call}params = [\"{{nope}}\"]\n"), "s.toml:5:10:", "no generator named 'nope'"),
            (format!("{base}{call}weight = 0\n"), "s.toml:5:10:", "weight"),
            (format!("thresholds = [\"p99 < soon\"]\n{base}{call}"), "s.toml:1:22:", "expected a duration"),
            (
                "[target]\nurl = \"ftp://x/\"\n[[call]]\nmethod = \"m\"\n".to_string(),
                "s.toml:2:7:",
                "scheme 'ftp'",
            ),
            (base.to_string(), "s.toml:", "needs at least one [[call]] (or a [source] replay)"),
            ("[target\n".to_string(), "s.toml:1:8:", ""),
        ];
        for (text, location, message) in cases {
            let error = error_of(&text);
            assert!(error.starts_with(location), "expected {location} in: {error}\n---\n{text}");
            assert!(error.contains(message), "expected '{message}' in: {error}");
        }
    }
}

mod target_tests {
    use super::*;

    const TWO: &str = r#"
[target]
timeout = "2s"
headers = { "x-shared" = "1" }

[load]
connections = 4
duration = "1s"
cooldown = "250ms"

[[targets]]
name = "fast"
url = "http://127.0.0.1:1/"
headers = { "x-first" = "a" }

[[targets]]
url = "http://127.0.0.1:2/v3/0123456789abcdef"
headers = { "x-second" = "b" }

[[call]]
method = "getSlot"
"#;

    fn header_names(config: &RunConfig) -> Vec<&str> {
        config.headers.iter().map(|(name, _)| name.as_str()).collect()
    }

    #[test]
    fn each_target_gets_the_shared_settings_and_its_own_headers() {
        let scenario = Scenario::parse(TWO, Path::new("s.toml")).unwrap();
        assert_eq!(scenario.cooldown, Duration::from_millis(250));
        let configs = scenario.configs();
        assert_eq!(configs.len(), 2);
        assert_eq!(configs[0].0, "fast");
        // Unnamed: host and port, never the path with its key.
        assert_eq!(configs[1].0, "127.0.0.1:2");
        assert_eq!(configs[0].1.target.port, 1);
        assert_eq!(configs[1].1.target.port, 2);
        assert_eq!(header_names(&configs[0].1), ["x-shared", "x-first"]);
        assert_eq!(header_names(&configs[1].1), ["x-shared", "x-second"]);
        assert_eq!(header_names(&scenario.config), ["x-shared", "x-first"]);
        for (_, config) in &configs {
            assert_eq!(config.timeout, Duration::from_secs(2));
            assert_eq!(config.load, Load::Closed { connections: 4 });
        }
        let draft = ScenarioDraft::parse(TWO, Path::new("s.toml")).unwrap();
        assert_eq!(draft.url(), Some("http://127.0.0.1:1/"));
        assert_eq!(draft.target_count(), 2);
    }

    #[test]
    fn a_url_from_the_command_line_replaces_every_target() {
        let draft = ScenarioDraft::parse(TWO, Path::new("s.toml")).unwrap();
        let scenario = draft.resolve(Some("http://127.0.0.1:3/"), None).unwrap();
        let configs = scenario.configs();
        assert_eq!(configs.len(), 1);
        assert_eq!(configs[0].1.target.port, 3);
        assert_eq!(header_names(&configs[0].1), ["x-shared"]);
    }

    #[test]
    fn a_single_url_is_one_target_named_after_its_host() {
        let text = "[target]\nurl = \"http://127.0.0.1:8899/\"\n[[call]]\nmethod = \"getSlot\"\n";
        let scenario = Scenario::parse(text, Path::new("s.toml")).unwrap();
        assert_eq!(scenario.targets.len(), 1);
        assert_eq!(scenario.targets[0].name, "127.0.0.1:8899");
        assert_eq!(scenario.cooldown, DEFAULT_COOLDOWN);
    }

    #[test]
    fn target_mistakes_are_located() {
        let call = "[[call]]\nmethod = \"getSlot\"\n";
        let entry = |name: &str, url: &str| format!("[[targets]]\nname = \"{name}\"\nurl = \"{url}\"\n");
        let cases = [
            (
                format!(
                    "[target]\nurl = \"http://127.0.0.1:1/\"\n{}{call}",
                    entry("a", "http://127.0.0.1:2/")
                ),
                "s.toml:2:7:",
                "not both",
            ),
            (
                format!("{}{}{call}", entry("a", "http://127.0.0.1:1/"), entry("a", "http://127.0.0.1:2/")),
                "s.toml:5:8:",
                "two targets are named 'a'",
            ),
            (format!("{}{call}", entry("a", "ftp://x/")), "s.toml:3:7:", "scheme 'ftp'"),
            (format!("{}{call}", entry(" ", "http://127.0.0.1:1/")), "s.toml:2:8:", "cannot be empty"),
            (
                format!("[[targets]]\nurl = \"http://127.0.0.1:1/\"\nport = 1\n{call}"),
                "s.toml:3:1:",
                "unknown field `port`",
            ),
            (call.to_string(), "s.toml:", "no URL"),
        ];
        for (text, location, message) in cases {
            let error = Scenario::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
            assert!(error.starts_with(location), "expected {location} in: {error}\n---\n{text}");
            assert!(error.contains(message), "expected '{message}' in: {error}");
        }
    }
}

mod head_tests {
    use super::*;

    #[test]
    fn head_ranges_parse_into_offsets() {
        assert_eq!(parse_head_range("head-1000..head"), Ok((1000, 0)));
        assert_eq!(parse_head_range("head - 20 .. head-5"), Ok((20, 5)));
        assert_eq!(parse_head_range("head..head"), Ok((0, 0)));
        for bad in ["1000..head", "head-5..head-10", "head-x..head", "head+5..head", "head-5"] {
            assert!(parse_head_range(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_head_range_becomes_a_range_below_the_sampled_head() {
        let text = "[target]\nurl = \"http://127.0.0.1:1/\"\n[generators]\nblock = { head_hex = \"head-100..head\" }\n[[call]]\nmethod = \"eth_getBlockByNumber\"\nparams = [\"{block}\", false]\n";
        let draft = ScenarioDraft::parse(text, Path::new("s.toml")).unwrap();
        assert_eq!(draft.pools_needed(), vec![HEAD.to_string()]);
        let pools = Pools {
            chain: SampleChain::Ethereum,
            chain_id: None,
            head: 5000,
            oldest: 4950,
            head_margin: 0,
            pools: Default::default(),
        };
        let scenario = draft.resolve(None, Some(&pools)).unwrap();
        let request = scenario.config.workload.sample_request(0);
        let block = request["params"][0].as_str().unwrap();
        let number = u64::from_str_radix(block.trim_start_matches("0x"), 16).unwrap();
        // The sample stopped at 4950, short of its 200-block window: the node has nothing older,
        // and the range shrinks to what it has.
        assert!((4950..=5000).contains(&number), "{block}");
        let full_node = Pools { oldest: 4801, ..pools.clone() };
        let scenario = draft.resolve(None, Some(&full_node)).unwrap();
        let mut lowest = u64::MAX;
        let workload = &scenario.config.workload;
        let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(3);
        for id in 0..400 {
            let mut body = Vec::new();
            workload.write_body(0, id, &mut rng, &mut body);
            let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let text = value["params"][0].as_str().unwrap().trim_start_matches("0x").to_string();
            lowest = lowest.min(u64::from_str_radix(&text, 16).unwrap());
        }
        // A full 200-block window says nothing of older blocks: the range is kept whole.
        assert!((4900..4950).contains(&lowest), "lowest {lowest}");
        let bad = text.replace("head-100..head", "head-1..head-9");
        let error = ScenarioDraft::parse(&bad, Path::new("s.toml")).unwrap_err().to_string();
        assert!(error.starts_with("s.toml:4:9:") && error.contains("the range is empty"), "{error}");
    }
}

mod stage_tests {
    use super::*;

    #[test]
    fn stages_become_a_staged_run() {
        let text = r#"
[target]
url = "http://127.0.0.1:1/"
[[call]]
method = "eth_blockNumber"
[[stage]]
connections = 50
duration = "5m"
ramp = "1m"
[[stage]]
connections = 100
duration = "5m"
ramp = "1m"
"#;
        let scenario = Scenario::parse(text, Path::new("s.toml")).unwrap();
        let config = scenario.config;
        assert!(config.validate().is_ok(), "{:?}", config.validate());
        assert_eq!(config.load, Load::Closed { connections: 100 });
        assert_eq!(config.stages.len(), 2);
        assert_eq!(config.measured_duration(), Some(Duration::from_secs(600)));
    }

    #[test]
    fn mixed_or_conflicting_stages_are_refused_where_they_are() {
        let base = "[target]\nurl = \"http://127.0.0.1:1/\"\n[[call]]\nmethod = \"m\"\n";
        let cases = [
            (format!("{base}[[stage]]\nrate = 5\nduration = \"1s\"\n[[stage]]\nconnections = 5\nduration = \"1s\"\n"), "s.toml:8:1:", "same kind"),
            (format!("{base}[[stage]]\nduration = \"1s\"\n"), "s.toml:5:1:", "connections or rate"),
            (format!("{base}[[stage]]\nrate = 5\nduration = \"1s\"\nramp = \"2s\"\n"), "s.toml:5:1:", "ramp must fit"),
        ];
        for (text, location, message) in cases {
            let error = Scenario::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
            assert!(error.starts_with(location) && error.contains(message), "{error}\n---\n{text}");
        }
    }

    #[test]
    fn a_bad_header_is_named_by_file_line_col_not_by_the_cli_flag() {
        let text = "[target]\nurl = \"http://127.0.0.1:8545\"\nheaders = { \"Bad Name\" = \"x\" }\n[[call]]\nmethod = \"x\"\n";
        let error = Scenario::parse(text, Path::new("s.toml")).unwrap_err().to_string();
        assert!(error.starts_with("s.toml:3:11:") && error.contains("not a valid header name"), "{error}");
        assert!(!error.contains("--header") && !error.contains("Bad Name"), "{error}");
        let text = "[target]\nurl = \"http://127.0.0.1:8545\"\nheaders = { Content-Length = \"3\" }\n[[call]]\nmethod = \"x\"\n";
        let error = Scenario::parse(text, Path::new("s.toml")).unwrap_err().to_string();
        assert!(error.starts_with("s.toml:3:") && error.contains("set by rpcbench"), "{error}");
    }

    #[test]
    fn http_calls_and_batches_come_from_the_scenario() {
        let text = r#"
[target]
url = "http://127.0.0.1:8545"

[load]
connections = 2
batch = 10

[generators]
block = { range = [1, 100] }
hash = { random_hex = 32 }

[[call]]
method = "eth_getBlockByNumber"
params = ["{block}", false]
"#;
        let scenario = Scenario::parse(text, Path::new("s.toml")).unwrap();
        assert_eq!(scenario.config.batch, 10);
        let rest = r#"
[target]
url = "http://127.0.0.1:8545"

[generators]
block = { range = [1, 100] }
hash = { random_hex = 32 }

[[call]]
http = "GET /block/{block}"
expect = "json"

[[call]]
name = "tx"
http = "POST /call?to={hash}"
body = { data = "{hash}" }
headers = { Accept = "application/json" }
"#;
        let scenario = Scenario::parse(rest, Path::new("s.toml")).unwrap();
        let calls = scenario.config.workload.calls();
        assert_eq!(calls[0].name(), "GET /block/{range}");
        assert!(calls[0].is_http() && calls[0].expects_json());
        assert_eq!(calls[1].name(), "tx");
        assert_eq!(scenario.config.batch, 1);
    }

    #[test]
    fn bad_http_calls_and_batches_are_named_by_file_line_col() {
        let base = "[target]\nurl = \"http://127.0.0.1:8545\"\n[generators]\nn = { range = [1, 2] }\n";
        for (tail, place, words) in [
            ("[[call]]\nhttp = \"FETCH /x\"\n", "s.toml:6:8:", "not an HTTP method"),
            ("[[call]]\nhttp = \"GET /block/{nope}\"\n", "s.toml:6:8:", "no generator named 'nope'"),
            ("[[call]]\nhttp = \"GET\"\n", "s.toml:6:8:", "METHOD /path"),
            ("[[call]]\nmethod = \"x\"\nbody = \"y\"\n", "s.toml:7:8:", "HTTP call"),
            ("[[call]]\nhttp = \"GET /\"\nexpect = \"xml\"\n", "s.toml:7:10:", "expect"),
            ("[load]\nbatch = 0\n[[call]]\nmethod = \"x\"\n", "s.toml:6:9:", "batch"),
            ("[load]\nbatch = 2\n[[call]]\nhttp = \"GET /\"\n", "s.toml:6:9:", "not HTTP calls"),
        ] {
            let text = format!("{base}{tail}");
            let error = Scenario::parse(&text, Path::new("s.toml")).unwrap_err().to_string();
            assert!(error.starts_with(place) && error.contains(words), "{tail}: {error}");
        }
    }

    #[test]
    fn a_replay_source_takes_the_place_of_the_mix() {
        let dir = std::env::temp_dir().join(format!("rpcbench-scenario-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let header = crate::traffic::TrafficHeader::new("http://127.0.0.1:1/", &[]);
        let mut text = serde_json::to_string(&header).unwrap() + "\n";
        for (offset, method) in [(0, "getSlot"), (500_000, "getHealth"), (1_000_000, "getSlot")] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}"}}"#);
            let entry = crate::traffic::TrafficEntry::for_request(offset, body.as_bytes());
            text += &(serde_json::to_string(&entry).unwrap() + "\n");
        }
        std::fs::write(dir.join("t.jsonl"), &text).unwrap();
        let scenario_path = dir.join("s.toml");
        let base = "[target]\nurl = \"http://127.0.0.1:1\"\n";
        let scenario = |extra: &str| {
            let text = format!("{base}{extra}");
            std::fs::write(&scenario_path, &text).unwrap();
            ScenarioDraft::load(&scenario_path).and_then(|draft| draft.resolve(None, None))
        };

        let replayed = scenario("[source]\nreplay = \"t.jsonl\"\nspeed = \"2x\"\n").unwrap();
        let config = &replayed.config;
        assert!(config.validate().is_ok(), "{:?}", config.validate());
        let names: Vec<&str> = config.workload.calls().iter().map(|c| c.name()).collect();
        assert_eq!(names, ["getSlot", "getHealth"]);
        assert_eq!(config.length.requests, Some(3), "one pass");
        let schedule = config.replay.as_ref().and_then(|replay| replay.schedule.clone()).unwrap();
        assert_eq!(schedule.offset_of(2), Some(Duration::from_millis(500)));
        assert!(matches!(config.load, Load::Open { .. }));

        let at_rate =
            scenario("[load]\nrate = 100\nduration = \"5s\"\n[source]\nreplay = \"t.jsonl\"\nloop = true\n");
        let config = at_rate.unwrap().config;
        assert_eq!(
            config.load,
            Load::Open { rate: 100.0, arrivals: Arrivals::Uniform, max_connections: 1024 }
        );
        assert_eq!(config.length, Length { duration: Some(Duration::from_secs(5)), requests: None });
        assert!(config.replay.as_ref().unwrap().schedule.is_none());

        let errors = [
            ("[source]\nreplay = \"t.jsonl\"\nspeed = \"fast\"\n", "s.toml:5:9"),
            ("[load]\nconnections = 4\n[source]\nreplay = \"t.jsonl\"\nspeed = 2\n", "s.toml:7:9: speed: "),
            ("[source]\nreplay = \"missing.jsonl\"\n", "s.toml:4:10: replay: "),
            ("[source]\nreplay = \"t.jsonl\"\n[[call]]\nmethod = \"getSlot\"\n", "no [[call]]"),
            ("[source]\nreplay = \"t.jsonl\"\nfrom = \"pcap\"\n", "s.toml:5:8"),
        ];
        for (extra, expected) in errors {
            let error = scenario(extra).unwrap_err().to_string();
            assert!(error.contains(expected), "{extra}: {error}");
        }
        // A line of the replayed file is named by its own place.
        std::fs::write(dir.join("t.jsonl"), text.replace("\"getHealth\"", "getHealth")).unwrap();
        let error = scenario("[source]\nreplay = \"t.jsonl\"\n").unwrap_err().to_string();
        assert!(error.contains("t.jsonl:3:"), "{error}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
