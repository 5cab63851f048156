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
        run.extend(self.run_args.iter().map(|arg| shell_quote(arg)));
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
}
