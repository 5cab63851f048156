//! Merging results files: the shards of one split run, or side-by-side copies of one
//! workload, into one file, losslessly (counts add up, histograms join).

use super::*;

impl ResultsFile {
    /// The shard entry describing this (single-run) file.
    fn as_shards(&self, source: &Path) -> Vec<Shard> {
        if !self.merged_from.is_empty() {
            return self.merged_from.clone();
        }
        vec![Shard {
            source: source.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            tool: self.tool.clone(),
            started_at: self.started_at.clone(),
            machine: self.machine.clone(),
            elapsed_ns: self.elapsed_ns,
            interrupted: self.interrupted,
            requests: self.total_requests(),
        }]
    }

    /// Why `other` is not a shard of the same workload as `self`, if it is not.
    pub fn mismatch(&self, other: &ResultsFile) -> Option<String> {
        if self.target != other.target {
            return Some(format!("target {} instead of {}", other.target, self.target));
        }
        let names = |file: &ResultsFile| file.methods.keys().cloned().collect::<Vec<_>>();
        if names(self) != names(other) {
            return Some(format!("method {} instead of {}", other.method_names(), self.method_names()));
        }
        for (name, method) in &self.methods {
            if other.methods[name].request != method.request {
                return Some(format!(
                    "request {} instead of {}",
                    other.methods[name].request, method.request
                ));
            }
        }
        let (a, b) = (&self.workload, &other.workload);
        if a.load != b.load {
            return Some(format!("load '{}' instead of '{}'", b.load.describe(), a.load.describe()));
        }
        if a.duration_us != b.duration_us || a.requests != b.requests || a.warmup_us != b.warmup_us {
            return Some("a different length (duration, request count or warmup)".into());
        }
        None
    }
}

/// Merges the results of shards of one workload (the same target, methods, requests, load
/// and length, run side by side) into one file. Histograms and counts add up exactly; series
/// points of the same interval add up (in the widest interval of the files: a shorter shard's
/// 100 ms points go into the seconds of a longer one's), their p50 and p99 from the union of
/// the shards' histograms (or the worse of the shards', for files that do not keep them); the
/// elapsed time is the longest shard's. `files` are `(path, file)`; errors name the path.
pub fn merge(files: &[(PathBuf, ResultsFile)]) -> Result<ResultsFile, ResultsError> {
    merge_shards(files, false)
}

/// [`merge`]; the shards of a run split with `--shard` must all be there, unless `partial`.
pub fn merge_shards(files: &[(PathBuf, ResultsFile)], partial: bool) -> Result<ResultsFile, ResultsError> {
    let Some(((first_path, first), rest)) = files.split_first() else {
        return Err(ResultsError::Invalid { path: PathBuf::from("-"), message: "nothing to merge".into() });
    };
    if let Some(spec) = first.workload.shard {
        let mut seen = vec![false; spec.count as usize];
        for (path, file) in files {
            let Some(theirs) = file.workload.shard.filter(|theirs| theirs.count == spec.count) else {
                return Err(ResultsError::Mismatch {
                    path: path.clone(),
                    message: format!("not one of the {} shards of {}", spec.count, first_path.display()),
                });
            };
            if !file.merged_from.is_empty() {
                return Err(ResultsError::Mismatch {
                    path: path.clone(),
                    message: "already a merge: merge the shards' own files".into(),
                });
            }
            if theirs.index >= theirs.count {
                // Its own fault, named as such (a modulo once blamed another file for it).
                return Err(ResultsError::Mismatch {
                    path: path.clone(),
                    message: format!(
                        "shard index {} is out of range for {} shards (1 to {})",
                        theirs.index.saturating_add(1),
                        theirs.count,
                        theirs.count
                    ),
                });
            }
            let slot = theirs.index as usize;
            if std::mem::replace(&mut seen[slot], true) {
                return Err(ResultsError::Mismatch {
                    path: path.clone(),
                    message: format!("shard {}/{} is given twice", theirs.index + 1, theirs.count),
                });
            }
        }
        let missing: Vec<String> = seen
            .iter()
            .enumerate()
            .filter(|(_, seen)| !**seen)
            .map(|(index, _)| format!("{}/{}", index + 1, spec.count))
            .collect();
        if !missing.is_empty() && !partial {
            return Err(ResultsError::Mismatch {
                path: first_path.clone(),
                message: format!(
                    "shard(s) {} missing (merge what is there with --partial)",
                    missing.join(", ")
                ),
            });
        }
    } else if let Some((path, _)) = rest.iter().find(|(_, file)| file.workload.shard.is_some()) {
        return Err(ResultsError::Mismatch {
            path: path.clone(),
            message: format!("a shard of a split run, and {} is not", first_path.display()),
        });
    }
    for (path, file) in rest {
        if let Some(message) = first.mismatch(file) {
            return Err(ResultsError::Mismatch {
                path: path.clone(),
                message: format!("{message} (compared with {})", first_path.display()),
            });
        }
    }
    // The same run twice (one file given twice, or a shard already inside a merged file) would
    // count its requests twice: refused, by the run's identity rather than the file's name.
    let mut seen: BTreeMap<(String, String, u64, u64), PathBuf> = BTreeMap::new();
    for (path, file) in files {
        for shard in file.as_shards(path) {
            let identity = (shard.started_at.clone(), shard.tool.clone(), shard.elapsed_ns, shard.requests);
            if let Some(earlier) = seen.insert(identity, path.clone()) {
                return Err(ResultsError::Mismatch {
                    path: path.clone(),
                    message: format!(
                        "the run started at {} is already in {}: the same run given twice",
                        shard.started_at,
                        earlier.display()
                    ),
                });
            }
        }
    }
    let overflow = |path: &PathBuf| ResultsError::Invalid {
        path: path.clone(),
        message: "its counts added to the others' do not fit a 64-bit count".into(),
    };
    let mut merged = first.clone();
    merged.label = None;
    // One shard's monitor saw the target under the load of all shards; several monitors'
    // samples cannot be lined up, so then none is kept.
    let mut monitored = files.iter().filter_map(|(_, f)| f.target_resources.as_ref());
    merged.target_resources = match (monitored.next(), monitored.next()) {
        (Some(only), None) => Some(only.clone()),
        _ => None,
    };
    merged.merged_from = files.iter().flat_map(|(path, file)| file.as_shards(path)).collect();
    merged.started_at = files.iter().map(|(_, f)| f.started_at.clone()).min().unwrap_or_default();
    merged.elapsed_ns = files.iter().map(|(_, f)| f.elapsed_ns).max().unwrap_or(0);
    merged.interrupted = files.iter().any(|(_, f)| f.interrupted);
    for (path, file) in rest {
        merged.exchanges = merged.exchanges.checked_add(file.exchanges).ok_or_else(|| overflow(path))?;
        merged.rate_headers.merge(&file.rate_headers);
        if let (Some(ours), Some(theirs)) = (merged.http2.as_mut(), file.http2.as_ref()) {
            let mut wire = ours.wire();
            wire.merge(&theirs.wire());
            ours.connections_opened = wire.connections_opened;
            ours.goaways_received = wire.goaways_received;
            ours.retried_after_goaway = wire.retried_after_goaway;
            ours.server_max_streams = wire.server_max_streams;
        }
        if let (Some(ours), Some(theirs)) = (merged.websocket.as_mut(), file.websocket.as_ref()) {
            let mut wire = ours.wire();
            wire.merge(&theirs.wire());
            ours.sockets_opened = wire.connections_opened;
            ours.stray_not_json = wire.stray_not_json;
            ours.stray_unknown_id = wire.stray_unknown_id;
            ours.stray_notifications = wire.stray_notifications;
        }
    }
    let tools: std::collections::BTreeSet<&str> = files.iter().map(|(_, f)| f.tool.as_str()).collect();
    if tools.len() > 1 {
        merged.tool = tools.into_iter().collect::<Vec<_>>().join(", ");
    }
    for (name, method) in merged.methods.iter_mut() {
        let mut totals = Totals::default();
        for (path, file) in files {
            let theirs = file.methods[name]
                .totals()
                .map_err(|err| ResultsError::Invalid { path: path.clone(), message: err.to_string() })?;
            // Counts that would wrap are refused, not wrapped.
            let mut counts = totals.counts.clone();
            counts.checked_merge(&theirs.counts).map_err(|_| overflow(path))?;
            for (ours, theirs) in [
                (totals.bytes_sent, theirs.bytes_sent),
                (totals.bytes_received, theirs.bytes_received),
                (totals.late, theirs.late),
                (totals.unsent, theirs.unsent),
            ] {
                ours.checked_add(theirs).ok_or_else(|| overflow(path))?;
            }
            for (status, count) in &theirs.status_counts {
                let ours = totals.status_counts.get(status).copied().unwrap_or(0);
                ours.checked_add(*count).ok_or_else(|| overflow(path))?;
            }
            totals.merge(&theirs);
        }
        *method = MethodResults::new(method.request.clone(), &totals);
    }
    let interval = files.iter().map(|(_, f)| f.series.interval_ms).max().unwrap_or(1000).max(1);
    // Every file keeps its intervals' histograms: merged intervals get exact percentiles.
    let exact = files.iter().all(|(_, f)| f.series.latency.len() == f.series.points.len());
    let mut slots: BTreeMap<u64, ([u64; 5], Option<Histogram<u64>>)> = BTreeMap::new();
    for (path, file) in files {
        for (index, point) in file.series.points.iter().enumerate() {
            let start_ms = point[0] / interval * interval;
            let (slot, latency) = slots.entry(start_ms).or_insert(([start_ms, 0, 0, 0, 0], None));
            slot[1] = slot[1].checked_add(point[1]).ok_or_else(|| overflow(path))?;
            slot[2] = slot[2].checked_add(point[2]).ok_or_else(|| overflow(path))?;
            slot[3] = slot[3].max(point[3]);
            slot[4] = slot[4].max(point[4]);
            if let (true, Some(theirs)) = (exact, file.series.point_latency(index)) {
                // (A read-back histogram has fixed bounds: the sum goes into one that grows.)
                latency.get_or_insert_with(crate::record::new_coarse_histogram).add(&theirs).ok();
            }
        }
    }
    let mut points = Vec::with_capacity(slots.len());
    let mut latencies = Vec::with_capacity(slots.len());
    for (mut point, latency) in slots.into_values() {
        match latency.filter(|_| exact) {
            Some(latency) => {
                point[3] = latency.value_at_quantile(0.5);
                point[4] = latency.value_at_quantile(0.99);
                latencies.push(
                    base64::engine::general_purpose::STANDARD
                        .encode(crate::record::serialize_histogram(&latency)),
                );
            }
            None => latencies.push(String::new()),
        }
        points.push(point);
    }
    merged.series =
        SeriesData { interval_ms: interval, points, latency: if exact { latencies } else { Vec::new() } };
    let mut phases: [PhaseTotals; 2] = Default::default();
    for (path, file) in files {
        if let Some(classes) = &file.phases {
            for (ours, theirs) in phases.iter_mut().zip(classes) {
                let theirs = theirs
                    .totals()
                    .map_err(|err| ResultsError::Invalid { path: path.clone(), message: err.to_string() })?;
                ours.merge(&theirs);
            }
        }
    }
    merged.phases = phases
        .iter()
        .any(|class| !class.send.is_empty())
        .then(|| [PhaseData::new(&phases[0]), PhaseData::new(&phases[1])]);
    // Stages of the same layout add up exactly; a shard's threshold verdicts do not hold for
    // the whole.
    merged.thresholds.clear();
    let layout = |file: &ResultsFile| {
        file.stages.iter().map(|s| (s.level.to_bits(), s.duration_us, s.ramp_us)).collect::<Vec<_>>()
    };
    if files.iter().all(|(_, file)| layout(file) == layout(first)) {
        for (index, stage) in merged.stages.iter_mut().enumerate() {
            let mut totals = StageTotals::default();
            for (path, file) in files {
                let theirs = file.stages[index]
                    .totals()
                    .map_err(|err| ResultsError::Invalid { path: path.clone(), message: err.to_string() })?;
                let mut counts = totals.counts.clone();
                counts.checked_merge(&theirs.counts).map_err(|_| overflow(path))?;
                totals.merge(&theirs);
            }
            stage.outcomes = totals.counts;
            stage.latency = encode_histogram(&totals.latency);
        }
    } else {
        merged.stages.clear();
    }
    Ok(merged)
}
