//! Kubernetes manifests for a run split across machines: a volume for the results, an Indexed
//! Job whose pod `i` runs shard `i` of the run (`--shards N`, the index from
//! `JOB_COMPLETION_INDEX`, every pod starting at one `--start-at` instant and saving
//! `/results/shard-i.json`), and a Job that waits for the N files and merges them. Kubernetes
//! is the coordinator; rpcbench adds none of its own. The manifests are JSON documents, which
//! are YAML too, so no quoting can go wrong.
//!
//! A `tx` run is split the same way; its keys are secrets, so the manifests never hold one:
//! a Kubernetes Secret named by [`SplitRunJob::key_secret`] is mounted read-only at
//! [`KEY_MOUNT`] in every shard's pod, and the run reads its key file from there.
//!
//! The same holds for a URL's API key or an Authorization header: the manifests never hold
//! one. [`literal_secret`] finds a run word that would show one; with an env Secret
//! ([`SplitRunJob::env_secret`]), the run names the secret as `$NAME` or `${NAME}`, which the
//! pod's shell expands from the Secret's keys when the pod starts.

use serde_json::{json, Value};

/// What a split run on Kubernetes needs.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitRunJob {
    /// The name of the Jobs and the volume (a DNS label).
    pub name: String,
    /// The container image holding the `rpcbench` binary.
    pub image: String,
    /// How many shards (pods).
    pub shards: u32,
    /// The start instant every shard waits for, as `--start-at` takes it.
    pub start_at: String,
    /// `rpcbench run` (or `rpcbench tx`) and its arguments, without `--shards`, `--start-at`
    /// and `--save`.
    pub run_args: Vec<String>,
    /// The Secret holding a `tx` run's keys, mounted read-only at [`KEY_MOUNT`] in every
    /// shard's pod (`None`: no keys to mount, as for `run` or `tx --dev`).
    pub key_secret: Option<String>,
    /// The Secret whose keys become the shards' pods' environment (`envFrom`), so that the
    /// run's words name them (`$RPC_URL`, `Bearer ${TOKEN}`) and the pod's shell expands them
    /// (`None`: every word is literal, `$` included).
    pub env_secret: Option<String>,
    /// Extra arguments of `rpcbench merge` (thresholds on the whole fleet's figures).
    pub merge_args: Vec<String>,
    /// The results volume's size request (`1Gi`).
    pub storage: String,
    /// How long the merge Job may run (waiting for the shards included) before Kubernetes
    /// fails it (`activeDeadlineSeconds`): a shard that never writes its file ends the wait.
    pub merge_deadline_seconds: u64,
}

/// Where the shards' pods find the key Secret's files (`--key-file /keys/senders.txt`).
pub const KEY_MOUNT: &str = "/keys";

/// Whether `name` is a DNS label Kubernetes accepts for Jobs and claims.
pub fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 52
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// One piece of a run word: literal text, or a reference to an environment variable (`$NAME`
/// or `${NAME}`, the name only here).
#[derive(Debug, Clone, Copy, PartialEq)]
enum WordPiece<'a> {
    Text(&'a str),
    Reference(&'a str),
}

/// Whether `name` is a shell variable's name.
fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A word cut into literal text and references; a `$` that opens no reference is text.
fn word_pieces(word: &str) -> Vec<WordPiece<'_>> {
    let mut pieces = Vec::new();
    let (mut rest, mut text_from) = (0, 0);
    while let Some(at) = word[rest..].find('$').map(|at| rest + at) {
        let after = &word[at + 1..];
        let reference = if let Some(braced) = after.strip_prefix('{') {
            braced
                .find('}')
                .map(|end| &braced[..end])
                .filter(|name| is_variable_name(name))
                .map(|name| (name, name.len() + 3))
        } else {
            let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(after.len());
            Some(&after[..end]).filter(|name| is_variable_name(name)).map(|name| (name, name.len() + 1))
        };
        match reference {
            Some((name, length)) => {
                if text_from < at {
                    pieces.push(WordPiece::Text(&word[text_from..at]));
                }
                pieces.push(WordPiece::Reference(name));
                rest = at + length;
                text_from = rest;
            }
            None => rest = at + 1,
        }
    }
    if text_from < word.len() {
        pieces.push(WordPiece::Text(&word[text_from..]));
    }
    pieces
}

/// The names a word refers to (`$NAME`, `${NAME}`), in order.
pub fn references(word: &str) -> Vec<&str> {
    word_pieces(word)
        .into_iter()
        .filter_map(|piece| match piece {
            WordPiece::Reference(name) => Some(name),
            WordPiece::Text(_) => None,
        })
        .collect()
}

/// The word with every reference replaced by `stand_in`.
fn with_references_as(word: &str, stand_in: &str) -> String {
    word_pieces(word)
        .into_iter()
        .map(|piece| match piece {
            WordPiece::Text(text) => text,
            WordPiece::Reference(_) => stand_in,
        })
        .collect()
}

/// What a word that names an env Secret's keys stands for when the run is checked on this
/// machine, which has not the Secret: a word that is one reference stands for a URL (the
/// node's, with its key), a reference inside a word for a plain word.
pub fn stand_in_for_check(word: &str) -> String {
    match word_pieces(word).as_slice() {
        [WordPiece::Reference(_)] => "http://127.0.0.1/".to_string(),
        _ => with_references_as(word, "x"),
    }
}

/// The first run word that shows a secret by itself (with `references` set, what the words
/// name from the env Secret is not shown and not counted), as reports would show it: a URL
/// with an API key in its path, a user name or password, or any query value (reports mask
/// every one), or the value of a request header that is not known to be harmless (an
/// Authorization header's scheme aside). Key files are refused elsewhere (they must be in the
/// key Secret); a method's parameters are not secrets (reports show them).
pub fn literal_secret(words: &[String], references: bool) -> Option<String> {
    use crate::util::redact::{is_secret_header, url, MASK};
    let mut header_next = false;
    for word in words {
        let shown = if references { with_references_as(word, MASK) } else { word.clone() };
        let header = if std::mem::take(&mut header_next) {
            Some(shown.as_str())
        } else if shown == "-H" || shown == "--header" {
            header_next = true;
            None
        } else {
            shown.strip_prefix("--header=").or_else(|| shown.strip_prefix("-H"))
        };
        if let Some(header) = header {
            let Some((name, value)) = header.split_once(':') else { continue };
            let mut value = value.trim();
            if let Some((scheme, rest)) = value.split_once(char::is_whitespace) {
                if crate::util::redact::is_auth_scheme(scheme) {
                    value = rest;
                }
            }
            if is_secret_header(name) && !value.replace(MASK, "").trim().is_empty() {
                return Some(format!("{}: {MASK}", name.trim()));
            }
        } else if shown.contains("://") {
            let redacted = url(&shown);
            if redacted != shown {
                return Some(redacted);
            }
        }
    }
    None
}

/// Quotes a word for `sh -c` so that the shell expands its references and nothing else.
fn shell_quote_expanding(word: &str) -> String {
    let mut out = String::from("\"");
    for piece in word_pieces(word) {
        match piece {
            WordPiece::Text(text) => {
                for c in text.chars() {
                    if matches!(c, '"' | '\\' | '$' | '`') {
                        out.push('\\');
                    }
                    out.push(c);
                }
            }
            WordPiece::Reference(name) => {
                out.push_str("${");
                out.push_str(name);
                out.push('}');
            }
        }
    }
    out.push('"');
    out
}

/// Quotes a word for `sh -c`.
fn shell_quote(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

impl SplitRunJob {
    /// The manifests, in the order to apply them.
    pub fn manifests(&self) -> Vec<Value> {
        let labels = json!({ "app.kubernetes.io/name": "rpcbench", "app.kubernetes.io/instance": self.name });
        let claim = format!("{}-results", self.name);
        let volume = json!([{ "name": "results", "persistentVolumeClaim": { "claimName": claim } }]);
        let mount = json!([{ "name": "results", "mountPath": "/results" }]);
        // The shards' pods also mount the key Secret, by reference: the keys stay in the Secret.
        let (mut shard_volumes, mut shard_mounts) = (volume.clone(), mount.clone());
        if let Some(secret) = &self.key_secret {
            shard_volumes
                .as_array_mut()
                .expect("an array")
                .push(json!({ "name": "keys", "secret": { "secretName": secret, "defaultMode": 0o400 } }));
            shard_mounts
                .as_array_mut()
                .expect("an array")
                .push(json!({ "name": "keys", "mountPath": KEY_MOUNT, "readOnly": true }));
        }
        let mut run: Vec<String> = vec!["exec".into(), "rpcbench".into()];
        run.extend(self.run_args.iter().map(|arg| match &self.env_secret {
            Some(_) if !references(arg).is_empty() => shell_quote_expanding(arg),
            _ => shell_quote(arg),
        }));
        run.push(format!("--shards {}", self.shards));
        run.push(format!("--start-at {}", shell_quote(&self.start_at)));
        run.push("--save /results/shard-${JOB_COMPLETION_INDEX}.json".into());
        let shards: Vec<String> = (0..self.shards).map(|i| format!("/results/shard-{i}.json")).collect();
        let merge_args: Vec<String> = self.merge_args.iter().map(|arg| shell_quote(arg)).collect();
        let merge = format!(
            "until [ \"$(ls /results/shard-*.json 2>/dev/null | wc -l)\" -ge {n} ]; do sleep 5; done; \
             exec rpcbench merge {files} -o /results/merged.json {extra}",
            n = self.shards,
            files = shards.join(" "),
            extra = merge_args.join(" ")
        );
        let job = |suffix: &str, container: &str, command: String, indexed: bool| {
            let (volume, mount) = if indexed { (&shard_volumes, &shard_mounts) } else { (&volume, &mount) };
            let mut spec = json!({
                "backoffLimit": 0,
                "template": {
                    "metadata": { "labels": labels },
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{
                            "name": container,
                            "image": self.image,
                            "command": ["sh", "-c", command],
                            "volumeMounts": mount
                        }],
                        "volumes": volume
                    }
                }
            });
            if let (true, Some(secret)) = (indexed, &self.env_secret) {
                spec["template"]["spec"]["containers"][0]["envFrom"] =
                    json!([{ "secretRef": { "name": secret } }]);
            }
            if indexed {
                spec["completionMode"] = json!("Indexed");
                spec["completions"] = json!(self.shards);
                spec["parallelism"] = json!(self.shards);
            } else {
                spec["activeDeadlineSeconds"] = json!(self.merge_deadline_seconds);
            }
            json!({
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": { "name": format!("{}-{suffix}", self.name), "labels": labels },
                "spec": spec
            })
        };
        vec![
            json!({
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": { "name": claim, "labels": labels },
                "spec": {
                    "accessModes": ["ReadWriteMany"],
                    "resources": { "requests": { "storage": self.storage } }
                }
            }),
            job("shards", "rpcbench", run.join(" "), true),
            job("merge", "merge", merge, false),
        ]
    }

    /// The manifests as one YAML stream (JSON documents separated by `---`).
    pub fn render(&self) -> String {
        let mut out = String::new();
        for manifest in self.manifests() {
            out.push_str("---\n");
            out.push_str(&serde_json::to_string_pretty(&manifest).expect("a manifest serializes"));
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> SplitRunJob {
        SplitRunJob {
            name: "getslot".into(),
            image: "rpcbench:0.1.0".into(),
            shards: 4,
            start_at: "2026-11-23T10:00:00Z".into(),
            run_args: [
                "run",
                "http://node:8545",
                "-m",
                "getSlot",
                "--rate",
                "40000",
                "-d",
                "60s",
                "--threshold",
                "p99 < 5ms",
            ]
            .map(String::from)
            .to_vec(),
            merge_args: vec!["--threshold".into(), "p99 < 5ms".into()],
            key_secret: None,
            env_secret: None,
            storage: "1Gi".into(),
            merge_deadline_seconds: 660,
        }
    }

    #[test]
    fn the_indexed_job_runs_every_shard_and_the_merge_waits_for_them() {
        let manifests = job().manifests();
        assert_eq!(manifests.len(), 3);
        let shards = &manifests[1];
        assert_eq!(shards["spec"]["completionMode"], "Indexed");
        assert_eq!(shards["spec"]["completions"], 4);
        assert_eq!(shards["spec"]["parallelism"], 4);
        let command = shards["spec"]["template"]["spec"]["containers"][0]["command"][2].as_str().unwrap();
        assert!(command.starts_with("exec rpcbench run http://node:8545 -m getSlot"), "{command}");
        assert!(command.contains("--threshold 'p99 < 5ms'"), "{command}");
        assert!(command.contains("--shards 4 --start-at 2026-11-23T10:00:00Z"), "{command}");
        assert!(command.ends_with("--save /results/shard-${JOB_COMPLETION_INDEX}.json"), "{command}");
        let merge = manifests[2]["spec"]["template"]["spec"]["containers"][0]["command"][2].as_str().unwrap();
        assert!(
            merge.contains("-ge 4 ]") && merge.contains("/results/shard-3.json -o /results/merged.json"),
            "{merge}"
        );
        assert!(job().render().starts_with("---\n{"));
    }

    #[test]
    fn a_tx_run_s_keys_are_a_secret_mounted_by_reference_never_in_the_manifests() {
        let tx = SplitRunJob {
            run_args: ["tx", "http://node:8545", "--key-file", "/keys/senders.txt", "--senders", "10"]
                .map(String::from)
                .to_vec(),
            key_secret: Some("tx-keys".into()),
            ..job()
        };
        let manifests = tx.manifests();
        let pod = &manifests[1]["spec"]["template"]["spec"];
        let command = pod["containers"][0]["command"][2].as_str().unwrap();
        assert!(
            command.starts_with("exec rpcbench tx http://node:8545 --key-file /keys/senders.txt"),
            "{command}"
        );
        assert!(command.contains("--shards 4 --start-at"), "{command}");
        let volumes = pod["volumes"].as_array().unwrap();
        assert_eq!(volumes[1]["secret"]["secretName"], "tx-keys");
        assert_eq!(volumes[1]["secret"]["defaultMode"], 0o400);
        let mounts = pod["containers"][0]["volumeMounts"].as_array().unwrap();
        assert_eq!(mounts[1], json!({"name": "keys", "mountPath": "/keys", "readOnly": true}));
        // The merge Job reads results only: no keys there.
        let merge = &manifests[2]["spec"]["template"]["spec"];
        assert_eq!(merge["volumes"].as_array().unwrap().len(), 1);
        assert!(!tx.render().contains("\"Secret\""), "a Secret reference, not a Secret");
        // Without a key Secret, the pods mount the results only.
        let plain = job().manifests();
        assert_eq!(plain[1]["spec"]["template"]["spec"]["volumes"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn the_merge_job_gives_up_at_its_deadline_instead_of_waiting_forever() {
        let manifests = job().manifests();
        assert_eq!(manifests[2]["spec"]["activeDeadlineSeconds"], 660);
        assert!(manifests[1]["spec"].get("activeDeadlineSeconds").is_none());
    }

    #[test]
    fn names_and_words_are_checked_and_quoted() {
        assert!(is_dns_label("getslot-40k"));
        for bad in ["", "GetSlot", "-x", "x-", "a_b", &"x".repeat(53)] {
            assert!(!is_dns_label(bad), "{bad}");
        }
        assert_eq!(shell_quote("plain-word"), "plain-word");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("$(reboot)"), "'$(reboot)'");
    }

    #[test]
    fn a_secret_in_a_url_or_header_is_found_and_a_reference_to_the_env_secret_is_not() {
        let words = |list: &[&str]| list.iter().map(|word| word.to_string()).collect::<Vec<_>>();
        let found = |list: &[&str], references| literal_secret(&words(list), references);
        // What reports mask, the manifests must not show.
        assert_eq!(
            found(&["run", "https://eth.example/v2/SECRET123abc", "-m", "eth_blockNumber"], false),
            Some("https://eth.example/v2/***".into())
        );
        assert_eq!(
            found(&["run", "https://sol.example/?api-key=SECRET123"], false),
            Some("https://sol.example/?api-key=***".into())
        );
        assert_eq!(
            found(&["run", "http://node:8545", "-H", "Authorization: Bearer SECRET123"], false),
            Some("Authorization: ***".into())
        );
        assert_eq!(
            found(&["run", "http://node:8545", "--header=X-Api-Key: SECRET123"], false),
            Some("X-Api-Key: ***".into())
        );
        assert_eq!(
            found(&["tx", "http://node:8545", "--ws", "wss://user:pw@node/"], false),
            Some("wss://***:***@node/".into())
        );
        // Harmless words, parameters and harmless headers pass.
        assert_eq!(
            found(
                &[
                    "run",
                    "http://node:8545",
                    "-m",
                    "getBalance",
                    "--params",
                    r#"["4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T"]"#,
                    "-H",
                    "Accept: application/json"
                ],
                false
            ),
            None
        );
        // With an env Secret, what the words name from it is neither shown nor a secret...
        assert_eq!(found(&["run", "$RPC_URL", "-H", "Authorization: Bearer ${TOKEN}"], true), None);
        assert_eq!(found(&["run", "https://sol.example/?api-key=${KEY}"], true), None);
        // ...but a literal key beside a reference still is, and without one `$` is literal text.
        assert_eq!(
            found(&["run", "https://x.example/?api-key=SECRET123&tag=${T}"], true),
            Some("https://x.example/?api-key=***&tag=***".into())
        );
        assert_eq!(
            found(&["run", "https://sol.example/?api-key=$KEY"], false),
            Some("https://sol.example/?api-key=***".into())
        );
    }

    #[test]
    fn an_env_secret_s_keys_are_expanded_by_the_pod_s_shell_and_nothing_else_is() {
        assert_eq!(references("${RPC_URL}"), ["RPC_URL"]);
        assert_eq!(references("https://x/?k=$KEY&t=${T_2}x"), ["KEY", "T_2"]);
        assert!(references("cost $5 ${1} ${} $").is_empty());
        assert_eq!(shell_quote_expanding("$RPC_URL"), r#""${RPC_URL}""#);
        assert_eq!(
            shell_quote_expanding(r#"Authorization: Bearer ${TOKEN} "q" \ `x` $(reboot)"#),
            r#""Authorization: Bearer ${TOKEN} \"q\" \\ \`x\` \$(reboot)""#
        );
        assert_eq!(stand_in_for_check("$RPC_URL"), "http://127.0.0.1/");
        assert_eq!(stand_in_for_check("Bearer ${TOKEN}"), "Bearer x");
        let with_env = SplitRunJob {
            run_args: [
                "run",
                "$RPC_URL",
                "-H",
                "Authorization: Bearer ${TOKEN}",
                "-m",
                "getSlot",
                "--note",
                "$5",
            ]
            .map(String::from)
            .to_vec(),
            env_secret: Some("rpc-secrets".into()),
            ..job()
        };
        let manifests = with_env.manifests();
        let container = &manifests[1]["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["envFrom"], json!([{ "secretRef": { "name": "rpc-secrets" } }]));
        let command = container["command"][2].as_str().unwrap();
        assert!(
            command.starts_with(
                r#"exec rpcbench run "${RPC_URL}" -H "Authorization: Bearer ${TOKEN}" -m getSlot --note '$5'"#
            ),
            "{command}"
        );
        // The merge Job reads results files only: it gets no secrets.
        assert!(manifests[2]["spec"]["template"]["spec"]["containers"][0].get("envFrom").is_none());
        // Without an env Secret, `$` is literal text, quoted as before.
        let literal = SplitRunJob { env_secret: None, ..with_env };
        let command = literal.manifests()[1]["spec"]["template"]["spec"]["containers"][0]["command"][2]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            command.starts_with("exec rpcbench run '$RPC_URL' -H 'Authorization: Bearer ${TOKEN}'"),
            "{command}"
        );
    }
}
