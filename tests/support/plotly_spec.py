"""A chart as the browser receives it: the Plotly spec Streamlit sends, its arrays read back as numbers."""

import base64
import json

import numpy as np


def drawn(array) -> np.ndarray:
    """A trace's array as the browser gets it (numpy arrays travel as base64 with their dtype), as floats."""
    if isinstance(array, dict):
        shape = [int(n) for n in str(array.get("shape", "")).split(",") if n.strip()]
        values = np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).astype(float)
        return values.reshape(shape) if shape else values
    return np.array([np.nan if v is None else float(v) for v in np.ravel(np.array(array, dtype=object))]).reshape(
        np.shape(np.array(array, dtype=object))
    )


def specs(at) -> list[dict]:
    """Every chart an AppTest run drew, as the spec the browser receives."""
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
