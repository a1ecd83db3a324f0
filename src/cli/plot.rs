//! PNG pictures: density maps, the energy error against time, and the benchmark's
//! rates against N. Drawn with plotters into memory with a bundled font (DejaVu Sans),
//! then encoded and written through [`super::files::write_atomic`].

use super::files::write_atomic;
use anyhow::{Result, anyhow};
use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;
use std::path::Path;

/// Margin around and between panels, pixels.
const MARGIN: u32 = 10;
/// Height of the title strip above the panels, pixels.
const TITLE: u32 = 30;

fn font_ready() -> Result<()> {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular()).is_ok()
    });
    ok.then_some(()).ok_or_else(|| anyhow!("the bundled font failed to load"))
}

fn save_png(path: &Path, (w, h): (u32, u32), rgb: &[u8]) -> Result<()> {
    write_atomic(path, |out| {
        let mut enc = png::Encoder::new(out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(std::io::Error::other)?;
        writer.write_image_data(rgb).map_err(std::io::Error::other)?;
        writer.finish().map_err(std::io::Error::other)
    })
}

fn draw_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> anyhow::Error {
    anyhow!("drawing a picture: {e}")
}

/// Screen pixels per grid cell: small grids are drawn in blocks, so a panel is at
/// least about 400 pixels wide.
pub fn cell_size(pixels: usize) -> usize {
    (400 / pixels.max(1)).max(1)
}

/// Size in pixels of a density picture with `panels` maps of `pixels` cells per side.
///
/// ```
/// assert_eq!(nbody::cli::plot::density_image_size(2, 400), (830, 440));
/// assert_eq!(nbody::cli::plot::density_image_size(2, 128), (798, 424)); // 3x3 blocks
/// ```
pub fn density_image_size(panels: usize, pixels: usize) -> (u32, u32) {
    let (p, d) = (panels as u32, (pixels * cell_size(pixels)) as u32);
    (p * d + (p + 1) * MARGIN, d + TITLE + MARGIN)
}

/// One panel of a density picture: a `pixels²` grid of mass (row 0 at the top) and its
/// caption.
#[derive(Debug)]
pub struct Panel<'a> {
    /// Row-major mass per cell.
    pub grid: &'a [f64],
    /// Caption drawn above it, e.g. "x-y".
    pub caption: String,
}

/// Writes density maps side by side: mass per pixel on a logarithmic colour scale
/// spanning four decades below the brightest pixel (empty pixels black).
pub fn density_png(path: &Path, title: &str, pixels: usize, panels: &[Panel<'_>]) -> Result<()> {
    font_ready()?;
    let size = density_image_size(panels.len(), pixels);
    let mut rgb = vec![0u8; (size.0 * size.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let style = ("sans-serif", 18).into_font().color(&BLACK);
        root.draw_text(title, &style, (MARGIN as i32, 6)).map_err(draw_error)?;
        let cell = cell_size(pixels);
        for (k, panel) in panels.iter().enumerate() {
            let x0 = MARGIN + k as u32 * ((pixels * cell) as u32 + MARGIN);
            let top = panel.grid.iter().copied().fold(0.0, f64::max);
            let hi = top.log10();
            let lo = hi - 4.0;
            for (i, &v) in panel.grid.iter().enumerate() {
                let colour = if v > 0.0 {
                    let h = ((v.log10() - lo) / (hi - lo)).clamp(0.0, 1.0);
                    ViridisRGB::get_color(h)
                } else {
                    BLACK
                };
                let (row, col) = (i / pixels * cell, i % pixels * cell);
                for dy in 0..cell {
                    for dx in 0..cell {
                        let at = ((x0 as usize + col + dx) as i32, (TITLE as usize + row + dy) as i32);
                        root.draw_pixel(at, &colour).map_err(draw_error)?;
                    }
                }
            }
            let caption = ("sans-serif", 15).into_font().color(&WHITE);
            root.draw_text(&panel.caption, &caption, (x0 as i32 + 6, TITLE as i32 + 6)).map_err(draw_error)?;
        }
        root.present().map_err(draw_error)?;
    }
    save_png(path, size, &rgb)
}

/// Size of the line plots.
pub const PLOT_SIZE: (u32, u32) = (900, 540);

type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// Draws a `PLOT_SIZE` picture on white with `draw` and writes it to `path`.
fn plot_png(path: &Path, draw: impl FnOnce(&Area<'_>) -> Result<()>) -> Result<()> {
    font_ready()?;
    let mut rgb = vec![0u8; (PLOT_SIZE.0 * PLOT_SIZE.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, PLOT_SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        draw(&root)?;
        root.present().map_err(draw_error)?;
    }
    save_png(path, PLOT_SIZE, &rgb)
}

/// A chart with the title and the margins every line plot uses.
fn chart_builder<'a, 'b>(root: &'a Area<'b>, title: &str) -> ChartBuilder<'a, 'b, BitMapBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, ("sans-serif", 20)).margin(15).x_label_area_size(45).y_label_area_size(80);
    b
}

/// Writes |ΔE/E| against time on a logarithmic axis (exact zeros, such as the first
/// sample, are left out; an all-zero record draws at the axis floor).
pub fn energy_png(path: &Path, title: &str, samples: &[(f64, f64)]) -> Result<()> {
    let floor = 1e-17;
    let mut ys: Vec<(f64, f64)> =
        samples.iter().filter(|s| s.1 != 0.0).map(|&(t, e)| (t, e.abs().max(floor))).collect();
    if ys.is_empty() {
        ys = samples.iter().map(|&(t, _)| (t, floor)).collect();
    }
    let t_max = ys.iter().map(|p| p.0).fold(0.0, f64::max).max(1e-12);
    let y_max = ys.iter().map(|p| p.1).fold(floor, f64::max) * 3.0;
    let y_min = ys.iter().map(|p| p.1).fold(f64::INFINITY, f64::min).min(y_max / 10.0).max(floor);
    plot_png(path, |root| {
        let mut chart = chart_builder(root, title)
            .build_cartesian_2d(0.0..t_max, (y_min..y_max).log_scale())
            .map_err(draw_error)?;
        chart
            .configure_mesh()
            .x_desc("time (N-body units)")
            .y_desc("|E(t) - E(0)| / |E(0)|")
            .y_label_formatter(&|y| format!("{y:.0e}"))
            .draw()
            .map_err(draw_error)?;
        chart.draw_series(LineSeries::new(ys, BLUE.stroke_width(2))).map_err(draw_error)?;
        Ok(())
    })
}

/// One line of the benchmark plot: a label and (N, interactions per second) points.
#[derive(Debug)]
pub struct Series {
    /// Legend text, e.g. "cpu f32".
    pub label: String,
    /// Points.
    pub points: Vec<(f64, f64)>,
}

/// Writes the benchmark's rates against N, log-log, one line per series.
pub fn bench_png(path: &Path, title: &str, series: &[Series]) -> Result<()> {
    let all = || series.iter().flat_map(|s| s.points.iter().copied());
    let (n_min, n_max) = all().fold((f64::INFINITY, 0.0f64), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let (r_min, r_max) = all().fold((f64::INFINITY, 0.0f64), |(a, b), p| (a.min(p.1), b.max(p.1)));
    if !(n_min.is_finite() && r_min.is_finite() && r_min > 0.0) {
        return Err(anyhow!("nothing to plot"));
    }
    plot_png(path, |root| {
        let mut chart = chart_builder(root, title)
            .build_cartesian_2d((n_min / 1.5..n_max * 1.5).log_scale(), (r_min / 3.0..r_max * 3.0).log_scale())
            .map_err(draw_error)?;
        chart
            .configure_mesh()
            .x_desc("N (targets = sources)")
            .y_desc("interactions per second")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0e}"))
            .draw()
            .map_err(draw_error)?;
        for (k, s) in series.iter().enumerate() {
            let colour = Palette99::pick(k).to_rgba();
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), colour.stroke_width(2)))
                .map_err(draw_error)?
                .label(s.label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
            chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, colour.filled()))).map_err(draw_error)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(draw_error)?;
        Ok(())
    })
}
