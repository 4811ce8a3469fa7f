"""Field reports: report, distribute, sweep and box, the tic source."""
