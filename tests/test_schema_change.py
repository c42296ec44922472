"""Declaring a schema change (service.schema_change) and reading features across it (service.features)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from model_store import Example
from service.features import FeatureError, FeatureSpace
from service.model_config import ModelConfig
from service.schema_change import SchemaChange, SchemaChangeError, SchemaChangeRequest, plan

CLOSED = ModelConfig(feature_names=["a", "b", "c", "d"], algorithm="opid")
OPEN = ModelConfig(max_features=6, algorithm="acog", eta=1.0, loss="II")


def test_a_new_name_list_keeps_the_common_names_and_adds_the_rest() -> None:
    change = plan(CLOSED, CLOSED.feature_names or [], SchemaChangeRequest(feature_names=["c", "x", "a", "y"]))
    assert change.migration.source.tolist() == [2, -1, 0, -1]
    assert (change.survived, change.vanished, change.augmented) == (("c", "a"), ("b", "d"), ("x", "y"))
    assert change.config.feature_names == ["c", "x", "a", "y"] and change.config.algorithm == "opid"
    again = SchemaChange.from_json(change.to_json())
    assert again.to_json() == change.to_json()


def test_vanished_and_augmented_names_keep_the_survivors_in_their_order() -> None:
    change = plan(CLOSED, ["a", "b", "c", "d"], SchemaChangeRequest(vanished=["b"], augmented=["z"]))
    assert change.names == ("a", "c", "d", "z")
    assert change.migration.source.tolist() == [0, 2, 3, -1]


def test_an_open_schema_keeps_its_capacity_and_its_free_slots() -> None:
    change = plan(OPEN, ["p", "q", "r"], SchemaChangeRequest(vanished=["q"], augmented=["s", "t"]))
    assert change.migration.n_old == change.migration.n_new == 6
    assert change.migration.source.tolist() == [0, 2, -1, -1, -1, -1]
    assert change.config.max_features == 6 and change.config.feature_names == ["p", "r", "s", "t"]


@pytest.mark.parametrize(
    ("request_body", "field", "problem"),
    [
        ({"vanished": ["nope"]}, "vanished", "'nope' is not in the model's schema"),
        ({"augmented": ["a"]}, "augmented", "'a' is already in the model's schema"),
        ({"feature_names": ["a", "b", "c", "d"]}, "feature_names", "changes nothing"),
        ({"vanished": ["a", "b", "c", "d"]}, "vanished", "without features"),
        ({"feature_names": ["a", "a"]}, "feature_names", "repeats 'a'"),
        ({"vanished": [], "augmented": []}, "vanished", "changes nothing"),
    ],
)
def test_a_change_that_does_not_fit_is_refused_naming_the_field(
    request_body: dict, field: str, problem: str
) -> None:
    with pytest.raises(SchemaChangeError) as err:
        plan(CLOSED, ["a", "b", "c", "d"], SchemaChangeRequest(**request_body))
    assert err.value.field == field and problem in err.value.problem


def test_more_names_than_the_capacity_and_index_schemas_are_refused() -> None:
    with pytest.raises(SchemaChangeError, match="max_features = 6"):
        plan(OPEN, ["p"], SchemaChangeRequest(augmented=[f"n{i}" for i in range(6)]))
    with pytest.raises(SchemaChangeError, match="named features") as err:
        plan(ModelConfig(n_features=3), [], SchemaChangeRequest(feature_names=["a"]))
    assert err.value.field == "model"


@pytest.mark.parametrize(
    "body", [{}, {"feature_names": ["a"], "vanished": ["b"]}, {"feature_names": []}, {"n_features": 3}]
)
def test_the_request_takes_exactly_one_form(body: dict) -> None:
    with pytest.raises(ValidationError):
        SchemaChangeRequest(**body)


def test_a_request_naming_a_vanished_feature_is_refused_naming_it() -> None:
    change = plan(CLOSED, ["a", "b", "c", "d"], SchemaChangeRequest(vanished=["b", "d"], augmented=["z"]))
    space = FeatureSpace(change.config, vanished=change.vanished)
    with pytest.raises(FeatureError) as err:
        space.parse({"a": 1.0, "b": 2.0, "z": 0.5})
    assert err.value.field == "features" and "'b'" in err.value.problem and "vanished" in err.value.problem
    _, vector = space.parse({"a": 1.0, "c": 2.0, "z": 0.5})
    assert vector[0].tolist() == [0, 1, 2]  # a, c, z


def test_an_example_predicted_before_the_change_is_read_by_name_without_its_vanished_part() -> None:
    change = plan(OPEN, ["p", "q", "r"], SchemaChangeRequest(vanished=["q"], augmented=["s"]))
    space = FeatureSpace(change.config, vanished=change.vanished)
    idx, val = space.vector(Example.named(("p", "q", "r"), np.array([0.1, 0.2, 0.3])))
    assert idx.tolist() == [0, 1] and val.tolist() == [0.1, 0.3]
    assert space.registry is not None and space.registry.names == ["p", "r", "s"]  # 'q' not registered again


def test_opid_options_reach_the_learner_and_are_refused_elsewhere() -> None:
    config = ModelConfig(feature_names=["a", "b"], algorithm="opid", opid={"gamma": 10.0, "refit_every": 30})
    params = config.learner_params()
    assert params["gamma"] == 10.0 and params["refit_every"] == 30 and params["rho"] == "laplace"
    assert ModelConfig(feature_names=["a"], algorithm="opid").learner_params()["gamma"] == "cv"
    assert config.build_learner().algorithm == "opid"
    assert ModelConfig(feature_names=["a"], algorithm="acog", opid={}).inapplicable() == ["opid"]
    assert "gamma" in ModelConfig(feature_names=["a"], algorithm="opid", gamma=2.0).inapplicable()
