//! What a user must never see: secrets (API keys in paths and queries, bearer tokens, key
//! headers) in a report, an error message or a saved file, even when a server echoes them back,
//! and a server's control characters unescaped on the terminal.

use super::*;

const PATH_KEY: &str = "9aa3d95b3bc440fa88ea12eaa4456161";

const QUERY_KEY: &str = "qk4Secret";

const DASH_KEY: &str = "dk5Secret";

const BEARER: &str = "bearer6Secret";

const HEADER_KEY: &str = "hk7Secret";

/// Everything the process printed, on both streams.
fn everything(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr(output))
}

fn assert_no_secret(output: &Output, context: &str) {
    let printed = everything(output);
    for secret in [PATH_KEY, QUERY_KEY, DASH_KEY, BEARER, HEADER_KEY, "sk_live"] {
        assert!(!printed.contains(secret), "{context}: {secret} was printed:\n{printed}");
    }
    assert!(!printed.contains("panicked"), "{context}: {printed}");
}

fn keyed_url(base: &str) -> String {
    format!("{base}v3/{PATH_KEY}?apikey={QUERY_KEY}&api-key={DASH_KEY}&chain=1")
}

#[test]
fn secrets_never_reach_text_or_json_reports_or_stderr() {
    let node = static_node();
    let url = keyed_url(&node.url());
    let auth = format!("Authorization: Bearer {BEARER}");
    let api_key = format!("x-api-key: {HEADER_KEY}");
    for format in ["text", "json"] {
        let output = rpcbench(&[
            "run", &url, "-m", "getSlot", "-n", "50", "-c", "2", "-H", &auth, "-H", &api_key, "-f", format,
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_no_secret(&output, format);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("/v3/***?apikey=***&api-key=***&chain=***"), "{format}: {stdout}");
    }
}

#[test]
fn secrets_never_reach_error_messages() {
    let dead_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let auth = format!("Authorization Bearer {BEARER}");
    let bad_name = format!("Authorization Bearer sk_live_{BEARER}: x");
    let bad_port = keyed_url("http://rpc.example.com:99999/");
    let unresolvable = keyed_url("http://rpcbench-test.invalid/");
    let dead = keyed_url(&format!("http://127.0.0.1:{dead_port}/"));
    let second_url = keyed_url("https://rpc.example.com/");
    let cases: [(&[&str], i32, &str); 6] = [
        (&["run", &bad_port, "-m", "getSlot"], 2, "not a valid URL"),
        (
            &["run", &unresolvable, "-m", "getSlot", "-n", "1"],
            1,
            "cannot resolve host 'rpcbench-test.invalid'",
        ),
        (&["run", &dead, "-m", "getSlot", "-n", "1", "-H", &auth], 2, "--header"),
        (&["run", &dead, "-m", "getSlot", "-n", "1", "-H", &bad_name], 2, "--header"),
        (&["run", &dead, &second_url, "-m", "getSlot"], 2, "unexpected argument"),
        (
            &[
                "run",
                "ftp://user:pass@127.0.0.1/",
                "-m",
                "getSlot",
                "-H",
                &format!("x-api-key: {HEADER_KEY}"),
            ],
            2,
            "scheme 'ftp'",
        ),
    ];
    for (args, code, message) in cases {
        let output = rpcbench(args);
        assert_eq!(output.status.code(), Some(code), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(message), "{args:?}: {}", stderr(&output));
        assert_no_secret(&output, &format!("{args:?}"));
    }
}

#[test]
fn secrets_never_reach_output_when_tls_fails() {
    // An https URL against a plain-HTTP node: every TLS handshake fails.
    let node = static_node();
    let url = keyed_url(&node.url().replace("http://", "https://"));
    let auth = format!("Authorization: Bearer {BEARER}");
    for format in ["text", "json"] {
        let output = rpcbench(&[
            "run",
            &url,
            "-m",
            "getSlot",
            "-n",
            "3",
            "-c",
            "1",
            "--insecure",
            "-H",
            &auth,
            "-f",
            format,
        ]);
        // Every connect failed: a dead target, exit 1 (a failure at run time, not usage).
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        assert_no_secret(&output, format);
        if format == "json" {
            let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            assert_eq!(report["outcomes"]["connect"], 3);
        }
    }
}

/// Requests' heads as a test server received them.
type Heads = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// A node on 127.0.0.1:0 that answers every request with a JSON-RPC error whose message is
/// `message` of the request's head (request line and headers), and keeps the heads. It serves
/// until the test process ends.
fn echoing_node(message: fn(&str) -> String) -> (String, Heads) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let heads = Heads::default();
    let seen = heads.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = seen.clone();
            std::thread::spawn(move || answer_with_errors(stream, message, &seen));
        }
    });
    (url, heads)
}

fn read_more(stream: &mut std::net::TcpStream, buf: &mut Vec<u8>) -> bool {
    use std::io::Read;
    let mut chunk = [0u8; 4096];
    match stream.read(&mut chunk) {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

fn answer_with_errors(mut stream: std::net::TcpStream, message: fn(&str) -> String, seen: &Heads) {
    use std::io::Write;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).ok();
    let mut buf = Vec::new();
    loop {
        let head_end = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            if !read_more(&mut stream, &mut buf) {
                return;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let length: usize = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buf.len() < head_end + length {
            if !read_more(&mut stream, &mut buf) {
                return;
            }
        }
        let body: serde_json::Value =
            serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or_default();
        buf.drain(..head_end + length);
        seen.lock().unwrap().push(head.clone());
        let reply = serde_json::json!({
            "jsonrpc": "2.0",
            "id": body["id"],
            "error": { "code": -32001, "message": message(&head) },
        })
        .to_string();
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{reply}",
            reply.len()
        );
        if stream.write_all(response.as_bytes()).is_err() {
            return;
        }
        stream.flush().ok();
    }
}

#[test]
fn secrets_echoed_by_a_server_never_reach_any_output_or_saved_file() {
    let (url, heads) = echoing_node(|head| format!("denied {head}"));
    let url = keyed_url(&url.replace("http://", "http://carol:pw-secret-9@"));
    // The URL's credentials are the Authorization header; the token goes in a header of its own.
    let auth = format!("X-Session: Bearer {BEARER}");
    let api_key = format!("x-api-key: {HEADER_KEY}");
    let dir = std::env::temp_dir().join(format!("rpcbench-secrets-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("run.json");
    let saved_arg = saved.display().to_string();
    let output = rpcbench(&[
        "run", &url, "-m", "getSlot", "-n", "5", "-c", "1", "-H", &auth, "-H", &api_key, "--save", &saved_arg,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // The credentials in the URL were sent, as curl sends them: base64("carol:pw-secret-9").
    let basic = "Y2Fyb2w6cHctc2VjcmV0LTk=";
    assert!(heads.lock().unwrap().iter().all(|head| head.contains(&format!("Authorization: Basic {basic}"))));
    let hidden = [PATH_KEY, QUERY_KEY, DASH_KEY, BEARER, HEADER_KEY, "carol", "pw-secret-9", basic];
    let check = |context: &str, printed: &str| {
        for secret in hidden {
            assert!(!printed.contains(secret), "{context}: {secret} was shown:\n{printed}");
        }
    };
    check("run", &everything(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("denied POST /v3/***"),
        "{}",
        everything(&output)
    );
    check("results file", &std::fs::read_to_string(&saved).unwrap());
    for format in ["text", "json", "markdown", "html", "csv"] {
        let output = rpcbench(&["report", &saved_arg, "--format", format]);
        assert_eq!(output.status.code(), Some(0), "{format}: {}", stderr(&output));
        check(format, &everything(&output));
    }
    // Sampling the node for a suite fails on its errors, and says so without the secrets.
    let output = rpcbench(&["run", &url, "--suite", "solana-rpc", "-n", "5", "-H", &auth, "-H", &api_key]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("denied POST"), "{}", stderr(&output));
    check("sampling", &everything(&output));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn server_control_characters_are_escaped_on_the_terminal() {
    let (url, _) = echoing_node(|_| "boom \u{1b}[2J\u{1b}[H\u{7}gone\rover\u{9b}31m".to_string());
    let raw_controls =
        |text: &str| text.chars().filter(|c| c.is_control() && *c != '\n').collect::<Vec<char>>();
    let output = rpcbench(&["run", &url, "-m", "getSlot", "-n", "3", "-c", "1"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let printed = everything(&output);
    assert!(raw_controls(&printed).is_empty(), "{printed:?}");
    assert!(printed.contains("boom \\u001b[2J"), "{printed}");
    // An error quoting the server (sampling for a suite) is escaped too.
    let output = rpcbench(&["run", &url, "--suite", "solana-rpc", "-n", "3"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let printed = everything(&output);
    assert!(raw_controls(&printed).is_empty(), "{printed:?}");
    assert!(printed.contains("boom \\u001b[2J"), "{printed}");
}
