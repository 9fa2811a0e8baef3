"""Benchmarks: the preset table of ``synthzoo bench`` (:mod:`.table`), the selector x model ablation
grid (:mod:`.grid`) and its heatmaps (:mod:`.plot`)."""

from .grid import GRID_COLUMNS, fit_sample, grid, grid_config, model_labels, module_labels
from .plot import plot_grid, summary_table
from .table import run, score

__all__ = ["GRID_COLUMNS", "fit_sample", "grid", "grid_config", "model_labels", "module_labels",
           "plot_grid", "run", "score", "summary_table"]
