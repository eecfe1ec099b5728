"""Arbitrary JSON at every Memory Bank route: never a 500, and every error in the plugin's shape."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
filters = st.fixed_dictionaries(
    {},
    optional={
        "document_id": values,
        "source": st.sampled_from(["chat", "email", "fax"]) | values,
        "author": values,
        "start_date": st.sampled_from(["2024-01-01", "2024-13-01", "now", "2024-01-01T00:00:00+25:00"])
        | values,
        "end_date": values,
    },
)
query = st.fixed_dictionaries(
    {"query": st.text(max_size=20) | values, "user_id": st.text(max_size=5) | values},
    optional={"top_k": values | st.integers(-3, 80), "filter": filters | values},
)
document = st.fixed_dictionaries(
    {"text": st.text(max_size=50) | values, "user_id": st.text(max_size=5) | values},
    optional={
        "id": values,
        "metadata": st.fixed_dictionaries({}, optional={"source": values, "created_at": values}) | values,
    },
)
bodies = st.one_of(
    st.tuples(
        st.just(("POST", "/query")), st.fixed_dictionaries({"queries": st.lists(query, max_size=3)}) | values
    ),
    st.tuples(
        st.just(("POST", "/upsert-action")),
        st.fixed_dictionaries({"documents": st.lists(document, max_size=3)}) | values,
    ),
    st.tuples(
        st.just(("DELETE", "/delete")),
        st.fixed_dictionaries(
            {"user_id": st.text(max_size=5)},
            optional={"ids": values, "filter": filters | values, "delete_all": values},
        ),
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=bodies)
async def test_no_500s_and_errors_keep_the_detail_shape(bank, case):
    (method, path), body = case
    response = await bank.client.request(method, f"/memorybank{path}", json=body, headers=bank.auth())
    payload = await response.json()
    assert response.status in (200, 400, 413, 422), (response.status, body, payload)
    if response.status == 422:
        assert all(set(e) == {"loc", "msg", "type"} and e["loc"][0] == "body" for e in payload["detail"])
    elif response.status != 200:
        assert isinstance(payload["detail"], str)
