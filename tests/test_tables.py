"""components.tables: rows handed to st.dataframe as an Arrow table show the same columns and values."""

from __future__ import annotations

import pyarrow as pa

from components.tables import arrow_rows


def test_rows_become_an_arrow_table_with_their_columns_in_order_and_mixed_ones_stay_rows() -> None:
    rows = [
        {"Neuron": 12, "Activation": 1.5, "Promotes": "paris, france"},
        {"Neuron": 7, "Activation": -0.25, "Promotes": ""},
    ]
    table = arrow_rows(rows)
    assert isinstance(table, pa.Table)
    assert table.column_names == ["Neuron", "Activation", "Promotes"] and table.to_pylist() == rows
    mixed = [{"Score": 0.5}, {"Score": "—"}]  # Arrow cannot type this column: pandas shows it, as before
    assert arrow_rows(mixed) is mixed and arrow_rows([]) == []
