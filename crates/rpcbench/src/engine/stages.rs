//! Load that changes over a run: stages of connections (closed loop) or request rates (open
//! loop), each held for a duration and reached by a linear ramp at its start (seed 003: 50,
//! 100, 200, 500 users with 1 minute ramps; seed 002: 20, 30, 40, 50 requests per second).
//!
//! A [`LevelCurve`] is the load level as a piecewise-linear function of time. Open-loop pacers
//! work in "count space": the n-th request is due when the integral of the rate reaches n, so a
//! uniform or Poisson stream of counts becomes a schedule that follows any rate curve exactly.
//! A single constant stage gives the plain `1 / rate` spacing.

use std::time::Duration;

/// One stage of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// Connections (closed loop) or requests per second (open loop) to hold.
    pub level: f64,
    /// How long the stage lasts, its ramp included.
    pub duration: Duration,
    /// How long the linear ramp from the previous level takes at the start of the stage (from
    /// zero for the first stage).
    pub ramp: Duration,
}

/// How a run's stages were changed to fit a length given on the command line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageScaling {
    /// The stages' total before.
    pub from: Duration,
    /// Their total after.
    pub to: Duration,
    /// The factor every stage's duration and ramp was multiplied by.
    pub factor: f64,
}

/// Stages with every duration and ramp multiplied by `factor` (levels unchanged): the same
/// shape, shorter or longer. `None` when the factor is not a positive finite number, or when a
/// stage would become shorter than a millisecond.
pub fn scale_stages(stages: &[Stage], factor: f64) -> Option<(Vec<Stage>, StageScaling)> {
    if !(factor.is_finite() && factor > 0.0) {
        return None;
    }
    let scale = |duration: Duration| Duration::try_from_secs_f64(duration.as_secs_f64() * factor).ok();
    let mut scaled = Vec::with_capacity(stages.len());
    for stage in stages {
        let duration = scale(stage.duration)?;
        if duration < Duration::from_millis(1) {
            return None;
        }
        scaled.push(Stage { level: stage.level, duration, ramp: scale(stage.ramp)?.min(duration) });
    }
    let total = |stages: &[Stage]| stages.iter().map(|stage| stage.duration).sum::<Duration>();
    let scaling = StageScaling { from: total(stages), to: total(&scaled), factor };
    Some((scaled, scaling))
}

/// Stages stretched or shrunk in proportion to last `length` in all (see [`scale_stages`]).
pub fn fit_stages(stages: &[Stage], length: Duration) -> Option<(Vec<Stage>, StageScaling)> {
    let total: Duration = stages.iter().map(|stage| stage.duration).sum();
    if total.is_zero() {
        return None;
    }
    scale_stages(stages, length.as_secs_f64() / total.as_secs_f64())
}

/// A load level as a piecewise-linear function of time (seconds from the start of the run);
/// after the last point the level stays where it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelCurve {
    /// (time, level) breakpoints, times increasing.
    points: Vec<(f64, f64)>,
    /// The integral of the level from 0 to each point's time.
    counts: Vec<f64>,
}

impl LevelCurve {
    /// A constant level.
    pub fn constant(level: f64) -> Self {
        Self::from_points(vec![(0.0, level)])
    }

    /// The curve of `stages` after `lead_in` seconds at the first stage's starting level (the
    /// warmup).
    pub fn from_stages(stages: &[Stage], lead_in: Duration) -> Self {
        let mut points = Vec::new();
        let mut time = 0.0;
        let first_level = match stages.first() {
            Some(stage) if stage.ramp.is_zero() => stage.level,
            _ => 0.0,
        };
        if !lead_in.is_zero() {
            points.push((0.0, first_level));
            time = lead_in.as_secs_f64();
        }
        let mut previous = first_level;
        for stage in stages {
            let ramp = stage.ramp.min(stage.duration).as_secs_f64();
            points.push((time, previous));
            points.push((time + ramp, stage.level));
            time += stage.duration.as_secs_f64();
            points.push((time, stage.level));
            previous = stage.level;
        }
        if points.is_empty() {
            points.push((0.0, 0.0));
        }
        Self::from_points(points)
    }

    fn from_points(mut points: Vec<(f64, f64)>) -> Self {
        points.dedup_by(|b, a| a.0 == b.0 && a.1 == b.1);
        let mut counts = Vec::with_capacity(points.len());
        let mut total = 0.0;
        for (index, point) in points.iter().enumerate() {
            if index > 0 {
                let (t0, l0) = points[index - 1];
                total += (l0 + point.1) / 2.0 * (point.0 - t0);
            }
            counts.push(total);
        }
        Self { points, counts }
    }

    /// The level at `time` seconds.
    pub fn level_at(&self, time: f64) -> f64 {
        let after = self.points.partition_point(|&(t, _)| t <= time);
        if after == 0 {
            return self.points[0].1;
        }
        if after == self.points.len() {
            return self.points[after - 1].1;
        }
        let (t0, l0) = self.points[after - 1];
        let (t1, l1) = self.points[after];
        if t1 == t0 {
            l1
        } else {
            l0 + (l1 - l0) * (time - t0) / (t1 - t0)
        }
    }

    /// The integral of the level from 0 to `time` seconds (requests due, in open loop).
    pub fn count_at(&self, time: f64) -> f64 {
        let after = self.points.partition_point(|&(t, _)| t <= time);
        if after == 0 {
            return self.points[0].1 * time.max(0.0);
        }
        let (t0, l0) = self.points[after - 1];
        let level = self.level_at(time);
        self.counts[after - 1] + (l0 + level) / 2.0 * (time - t0)
    }

    /// The mean level between `from` and `to` seconds (the level at `from` when they meet).
    pub fn mean_between(&self, from: f64, to: f64) -> f64 {
        if to <= from {
            return self.level_at(from);
        }
        (self.count_at(to) - self.count_at(from)) / (to - from)
    }

    /// The highest level anywhere on the curve.
    pub fn max_level(&self) -> f64 {
        self.points.iter().map(|&(_, level)| level).fold(0.0, f64::max)
    }

    /// The time (seconds) at which the integral of the level reaches `count`; `None` if it
    /// never does (the curve ends at level zero).
    pub fn time_at_count(&self, count: f64) -> Option<f64> {
        let segment = self.counts.partition_point(|&c| c <= count);
        if segment == self.counts.len() {
            // Past the last point: the level stays at the last value.
            let (t, level) = *self.points.last()?;
            let remaining = count - self.counts.last()?;
            return (level > 0.0).then(|| t + remaining / level);
        }
        if segment == 0 {
            return Some(self.points[0].0);
        }
        let (t0, l0) = self.points[segment - 1];
        let (t1, l1) = self.points[segment];
        let remaining = count - self.counts[segment - 1];
        let span = t1 - t0;
        let slope = (l1 - l0) / span;
        // remaining = l0 * tau + slope * tau^2 / 2, for tau in [0, span].
        let tau = if slope.abs() < 1e-12 {
            remaining / l0
        } else {
            (-l0 + (l0 * l0 + 2.0 * slope * remaining).max(0.0).sqrt()) / slope
        };
        Some(t0 + tau.clamp(0.0, span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_length_scales_the_stages_in_proportion() {
        let s = Duration::from_secs;
        let stage = |level, duration, ramp| Stage { level, duration: s(duration), ramp: s(ramp) };
        // Seed 003's shape: 4 stages of 60 s with 10 s ramps, 4 minutes in all.
        let stages = [stage(50.0, 60, 10), stage(100.0, 60, 10), stage(200.0, 60, 10), stage(500.0, 60, 10)];
        // (length or factor) -> (stage duration, ramp, total)
        let (fitted, scaling) = fit_stages(&stages, s(30)).unwrap();
        assert_eq!(scaling, StageScaling { from: s(240), to: s(30), factor: 0.125 });
        assert!(fitted.iter().all(|st| st.duration == Duration::from_millis(7500)));
        assert!(fitted.iter().all(|st| st.ramp == Duration::from_millis(1250)));
        assert_eq!(fitted.iter().map(|st| st.level).collect::<Vec<_>>(), vec![50.0, 100.0, 200.0, 500.0]);
        let (scaled, scaling) = scale_stages(&stages, 0.1).unwrap();
        assert_eq!(scaling.to, s(24));
        assert_eq!(scaled[0].duration, s(6));
        assert_eq!(scaled[0].ramp, s(1));
        // Longer works too.
        assert_eq!(scale_stages(&stages, 2.0).unwrap().1.to, s(480));
        // Nonsense factors and stages shorter than a millisecond are refused.
        for factor in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-6] {
            assert!(scale_stages(&stages, factor).is_none(), "{factor}");
        }
        assert!(fit_stages(&[], s(30)).is_none());
    }

    #[test]
    fn mean_levels_weigh_stages_and_ramps_by_time() {
        let stage =
            |level, duration| Stage { level, duration: Duration::from_secs(duration), ramp: Duration::ZERO };
        let curve = LevelCurve::from_stages(
            &[stage(20.0, 4), stage(30.0, 4), stage(40.0, 4), stage(50.0, 4)],
            Duration::from_secs(1),
        );
        assert_eq!(curve.mean_between(1.0, 17.0), 35.0);
        assert_eq!(curve.mean_between(1.0, 5.0), 20.0);
        assert_eq!(curve.count_at(17.0), 20.0 + 35.0 * 16.0);
        let ramped = LevelCurve::from_stages(
            &[Stage { level: 100.0, duration: Duration::from_secs(10), ramp: Duration::from_secs(10) }],
            Duration::ZERO,
        );
        assert_eq!(ramped.mean_between(0.0, 10.0), 50.0);
        assert_eq!(LevelCurve::constant(5.0).mean_between(3.0, 3.0), 5.0);
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn a_constant_curve_spaces_requests_one_over_the_rate() {
        let curve = LevelCurve::constant(1000.0);
        for (count, time) in [(0.0, 0.0), (1.0, 0.001), (2500.0, 2.5)] {
            assert!((curve.time_at_count(count).unwrap() - time).abs() < 1e-9, "{count}");
        }
        assert_eq!(curve.level_at(99.0), 1000.0);
    }

    #[test]
    fn steps_without_ramps_hold_each_rate_for_its_stage() {
        // Seed 002: 20, 30, 40, 50 requests per second, 10 s each.
        let stages: Vec<Stage> = [20.0, 30.0, 40.0, 50.0]
            .iter()
            .map(|&level| Stage { level, duration: secs(10), ramp: Duration::ZERO })
            .collect();
        let curve = LevelCurve::from_stages(&stages, Duration::ZERO);
        assert_eq!(curve.level_at(5.0), 20.0);
        assert_eq!(curve.level_at(15.0), 30.0);
        assert_eq!(curve.level_at(39.9), 50.0);
        // 200 requests in the first 10 s, 300 in the next: request 200 is due at 10 s.
        assert!((curve.time_at_count(200.0).unwrap() - 10.0).abs() < 1e-9);
        assert!((curve.time_at_count(500.0).unwrap() - 20.0).abs() < 1e-9);
        assert!((curve.time_at_count(1400.0).unwrap() - 40.0).abs() < 1e-9);
    }

    #[test]
    fn ramps_are_linear_and_start_from_zero() {
        // Seed 003: ramp to 50 users over 60 s, hold to 300 s; then ramp to 100 over 60 s.
        let stages = [
            Stage { level: 50.0, duration: secs(300), ramp: secs(60) },
            Stage { level: 100.0, duration: secs(300), ramp: secs(60) },
        ];
        let curve = LevelCurve::from_stages(&stages, Duration::ZERO);
        let cases = [(0.0, 0.0), (30.0, 25.0), (60.0, 50.0), (299.0, 50.0), (330.0, 75.0), (400.0, 100.0)];
        for (time, level) in cases {
            assert!((curve.level_at(time) - level).abs() < 1e-9, "at {time}: {}", curve.level_at(time));
        }
        assert_eq!(curve.max_level(), 100.0);
        // The ramp's area is 50 * 60 / 2 = 1500 requests at a rate curve like this one.
        assert!((curve.time_at_count(1500.0).unwrap() - 60.0).abs() < 1e-6);
        // Half of the ramp's area is reached at 60 / sqrt(2) s.
        assert!((curve.time_at_count(750.0).unwrap() - 60.0 / 2f64.sqrt()).abs() < 1e-6);
    }

    #[test]
    fn a_lead_in_holds_the_first_level_before_the_stages() {
        let stages = [Stage { level: 10.0, duration: secs(5), ramp: Duration::ZERO }];
        let curve = LevelCurve::from_stages(&stages, secs(2));
        assert_eq!(curve.level_at(1.0), 10.0);
        assert!((curve.time_at_count(20.0).unwrap() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_curve_that_ends_at_zero_has_no_more_requests() {
        let stages = [Stage { level: 0.0, duration: secs(5), ramp: Duration::ZERO }];
        let curve = LevelCurve::from_stages(&stages, Duration::ZERO);
        assert_eq!(curve.time_at_count(1.0), None);
    }
}
