//! How well the model predicts measured times: R², the share of variants within 20%, and the
//! Spearman rank correlation (the model's job is to rank variants correctly); and the
//! predicted-versus-measured plot (`absinthe bench --plot`).

use std::path::Path;

use image::ImageEncoder;
use plotters::prelude::*;

use crate::MeasureError;

/// One variant: predicted and measured seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub label: String,
    pub predicted: f64,
    pub measured: f64,
    /// The MILP's optimum (drawn marked).
    pub optimum: bool,
}

/// The accuracy summary.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Summary {
    pub variants: usize,
    /// R² of predicted against measured seconds.
    pub r2: f64,
    /// Share of variants whose prediction is within 20% of the measured time.
    pub within_20_percent: f64,
    /// Spearman rank correlation of predicted and measured.
    pub spearman: f64,
}

/// The summary of the points with finite, positive times.
pub fn summarize(points: &[Point]) -> Summary {
    let good: Vec<&Point> = points
        .iter()
        .filter(|p| p.predicted.is_finite() && p.measured.is_finite() && p.measured > 0.0)
        .collect();
    let pairs: Vec<(f64, f64)> = good.iter().map(|p| (p.predicted, p.measured)).collect();
    let within = good
        .iter()
        .filter(|p| (p.predicted - p.measured).abs() <= 0.2 * p.measured)
        .count();
    Summary {
        variants: good.len(),
        r2: r_squared(&pairs),
        within_20_percent: if good.is_empty() {
            f64::NAN
        } else {
            within as f64 / good.len() as f64
        },
        spearman: spearman(
            &pairs.iter().map(|p| p.0).collect::<Vec<_>>(),
            &pairs.iter().map(|p| p.1).collect::<Vec<_>>(),
        ),
    }
}

/// Ranks from 1, ties sharing their mean rank.
fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut rank = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            rank[k] = mean;
        }
        i = j + 1;
    }
    rank
}

fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    if x.len() < 2 {
        return f64::NAN;
    }
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let cov: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let vx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let vy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    cov / (vx * vy).sqrt()
}

/// Spearman's rank correlation (Pearson's on ranks, ties averaged).
pub fn spearman(x: &[f64], y: &[f64]) -> f64 {
    pearson(&ranks(x), &ranks(y))
}

/// Registers a sans-serif font for text in plots from the usual system locations
/// (DejaVu Sans, Debian's `fonts-dejavu-core`); false when none is found, in which case plots
/// are drawn without text.
fn register_font() -> bool {
    static FONT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FONT.get_or_init(|| {
        let candidates = [
            "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
            "/usr/share/fonts/TTF/DejaVuSans.ttf",
            "/usr/share/fonts/dejavu/DejaVuSans.ttf",
            "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
        ];
        for path in candidates {
            if let Ok(bytes) = std::fs::read(path) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return true;
                }
            }
        }
        false
    })
}

/// Refuses, before anything is measured, a plot path that `plot` could not write: an
/// extension other than .png or .svg, a directory, a path under a file.
pub fn check_plot_path(path: &Path) -> Result<(), MeasureError> {
    plot_kind(path)?;
    absinthe_codegen::files::check_output(path, false)
        .map_err(|e| MeasureError::Plot(e.to_string()))
}

/// Whether `path` names a PNG (else an SVG) plot.
fn plot_kind(path: &Path) -> Result<bool, MeasureError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "png" => Ok(true),
        "svg" => Ok(false),
        _ => Err(MeasureError::Plot(format!(
            "{}: the plot file must end in .png or .svg",
            path.display()
        ))),
    }
}

/// Draws predicted against measured seconds (log-log, the diagonal and ±20% lines, the optimum
/// marked) into `path`, a .png or .svg file, drawn in memory and written whole
/// (`write_atomic`: a failed write names the file and leaves no part of it).
pub fn plot(path: &Path, title: &str, points: &[Point]) -> Result<(), MeasureError> {
    let size = (900u32, 720u32);
    let failed = |e: &dyn std::fmt::Display| MeasureError::Plot(e.to_string());
    let bytes = if plot_kind(path)? {
        let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
        draw(
            BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area(),
            title,
            points,
        )?;
        let mut png = Vec::new();
        image::codecs::png::PngEncoder::new(&mut png)
            .write_image(&rgb, size.0, size.1, image::ColorType::Rgb8)
            .map_err(|e| failed(&e))?;
        png
    } else {
        let mut svg = String::new();
        draw(
            SVGBackend::with_string(&mut svg, size).into_drawing_area(),
            title,
            points,
        )?;
        svg.into_bytes()
    };
    absinthe_codegen::files::write_atomic(path, &bytes).map_err(|e| failed(&e))
}

/// An axis label: seconds as milliseconds with two or three significant digits.
fn milliseconds(seconds: &f64) -> String {
    let ms = seconds * 1e3;
    if ms >= 10.0 {
        format!("{ms:.0}")
    } else if ms >= 1.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}

/// The points a plot can show (a positive, finite prediction and measurement) and the range of
/// both axes, half as much again beyond them.
fn plotted(points: &[Point]) -> Result<(Vec<&Point>, f64, f64), MeasureError> {
    let good: Vec<&Point> = points
        .iter()
        .filter(|p| {
            p.predicted > 0.0
                && p.measured > 0.0
                && p.predicted.is_finite()
                && p.measured.is_finite()
        })
        .collect();
    if good.is_empty() {
        return Err(MeasureError::Plot(
            "no variant has both a prediction and a measurement".into(),
        ));
    }
    let lo = good
        .iter()
        .map(|p| p.predicted.min(p.measured))
        .fold(f64::INFINITY, f64::min)
        / 1.5;
    let hi = good
        .iter()
        .map(|p| p.predicted.max(p.measured))
        .fold(0.0, f64::max)
        * 1.5;
    Ok((good, lo, hi))
}

fn draw<DB: DrawingBackend>(
    area: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    points: &[Point],
) -> Result<(), MeasureError> {
    let err = |e: &dyn std::fmt::Display| MeasureError::Plot(e.to_string());
    let (good, lo, hi) = plotted(points)?;
    let text = register_font();
    area.fill(&WHITE).map_err(|e| err(&e))?;
    let mut builder = ChartBuilder::on(&area);
    builder.margin(20);
    if text {
        builder
            .caption(title, ("sans-serif", 22))
            .x_label_area_size(50)
            .y_label_area_size(80);
    }
    let mut chart = builder
        .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
        .map_err(|e| err(&e))?;
    let mut mesh = chart.configure_mesh();
    if text {
        mesh.x_desc("predicted (ms)")
            .y_desc("measured (ms)")
            .x_labels(8)
            .y_labels(8)
            .x_label_formatter(&milliseconds)
            .y_label_formatter(&milliseconds);
    } else {
        mesh.disable_x_axis().disable_y_axis();
    }
    mesh.draw().map_err(|e| err(&e))?;
    let line = |factor: f64| {
        (0..=50).map(move |k| {
            let x = lo * (hi / lo).powf(k as f64 / 50.0);
            (x, x * factor)
        })
    };
    let diagonal = chart
        .draw_series(LineSeries::new(line(1.0), BLACK.stroke_width(2)))
        .map_err(|e| err(&e))?;
    if text {
        diagonal
            .label("measured = predicted")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    }
    for (k, factor) in [1.2, 1.0 / 1.2].into_iter().enumerate() {
        let s = chart
            .draw_series(LineSeries::new(line(factor), BLACK.mix(0.4)))
            .map_err(|e| err(&e))?;
        if text && k == 0 {
            s.label("±20%")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
        }
    }
    let others = chart
        .draw_series(
            good.iter()
                .filter(|p| !p.optimum)
                .map(|p| Circle::new((p.predicted, p.measured), 4, BLUE.mix(0.7).filled())),
        )
        .map_err(|e| err(&e))?;
    if text {
        others
            .label("variants")
            .legend(|(x, y)| Circle::new((x + 10, y), 4, BLUE.mix(0.7).filled()));
    }
    let opt = chart
        .draw_series(
            good.iter()
                .filter(|p| p.optimum)
                .map(|p| TriangleMarker::new((p.predicted, p.measured), 9, RED.filled())),
        )
        .map_err(|e| err(&e))?;
    if text {
        opt.label("MILP optimum")
            .legend(|(x, y)| TriangleMarker::new((x + 10, y), 7, RED.filled()));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
    }
    area.present().map_err(|e| err(&e))?;
    Ok(())
}

/// R² of predictions against measurements: `1 - Σ(m - p)² / Σ(m - mean m)²`.
pub fn r_squared(pairs: &[(f64, f64)]) -> f64 {
    if pairs.is_empty() {
        return f64::NAN;
    }
    let mean = pairs.iter().map(|p| p.1).sum::<f64>() / pairs.len() as f64;
    let total: f64 = pairs.iter().map(|p| (p.1 - mean).powi(2)).sum();
    let residual: f64 = pairs.iter().map(|p| (p.1 - p.0).powi(2)).sum();
    if total == 0.0 {
        return if residual == 0.0 {
            1.0
        } else {
            f64::NEG_INFINITY
        };
    }
    1.0 - residual / total
}
