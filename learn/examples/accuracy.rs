//! Accuracy summary and plot over one or more `absinthe bench --format json` outputs (for
//! example several `random:N` seeds of one program), as `absinthe bench --plot` draws them.
//!
//!     cargo run -p absinthe-learn --example accuracy -- OUT.png|svg TITLE A.json [B.json ...]

use absinthe_learn::accuracy::{plot, summarize, Point};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        return Err("usage: accuracy OUT.png|svg TITLE A.json [B.json ...]".into());
    }
    let mut points: Vec<Point> = Vec::new();
    for file in &args[2..] {
        let rows: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(file)?)?;
        for r in rows {
            let (Some(p), Some(m)) = (
                r["predicted_seconds"].as_f64(),
                r["measured_seconds"].as_f64(),
            ) else {
                continue;
            };
            let label = r["variant"].as_str().unwrap_or_default().to_string();
            let key = (r["groups"].to_string(), r["tiles"].to_string());
            // The same configuration from two files is one variant (the first measurement).
            if label == "naive"
                || points
                    .iter()
                    .any(|q| q.label == format!("{}{}", key.0, key.1))
            {
                continue;
            }
            points.push(Point {
                label: format!("{}{}", key.0, key.1),
                predicted: p,
                measured: m,
                optimum: label == "opt",
            });
        }
    }
    let s = summarize(&points);
    println!(
        "{}: {} variants, R² {:.3}, {:.0}% within 20%, Spearman {:.3}",
        args[1],
        s.variants,
        s.r2,
        s.within_20_percent * 100.0,
        s.spearman
    );
    plot(std::path::Path::new(&args[0]), &args[1], &points)?;
    Ok(())
}
