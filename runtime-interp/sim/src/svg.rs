//! Utilisation over time as an SVG chart (plotters): live workers (requested
//! and not yet gone) and busy workers, each averaged per bin.

use crate::timeline::Timeline;
use plotters::prelude::*;

/// Draws the timeline; `title` heads the chart.
pub fn utilisation_svg(t: &Timeline, end: f64, title: &str) -> Result<String, String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let bins = ((end - t.start) / t.width).ceil().max(1.0) as usize;
    let bins = bins.min(t.busy.len());
    let avg = |v: &[f64]| -> Vec<(f64, f64)> {
        v.iter()
            .take(bins)
            .enumerate()
            .map(|(i, &x)| (t.start + (i as f64 + 0.5) * t.width, x / t.width))
            .collect()
    };
    let (busy, live) = (avg(&t.busy), avg(&t.live));
    let top = live.iter().map(|p| p.1).fold(1.0f64, f64::max) * 1.1;
    let x1 = end.max(t.start + t.width);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(t.start..x1, 0.0..top)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("seconds")
            .y_desc("workers")
            .draw()
            .map_err(|e| err(&e))?;
        let blue = RGBColor(0x4c, 0x78, 0xa8);
        let orange = RGBColor(0xf5, 0x85, 0x18);
        chart
            .draw_series(LineSeries::new(live, orange.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label("live workers")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], orange));
        chart
            .draw_series(AreaSeries::new(busy, 0.0, blue.mix(0.4)).border_style(blue))
            .map_err(|e| err(&e))?
            .label("busy workers")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
    }
    Ok(svg)
}
