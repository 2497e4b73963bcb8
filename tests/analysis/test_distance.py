import math

import pytest
import torch

from mtllib.analysis.distance import parameter_distance


def _pair():
    torch.manual_seed(0)
    a = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    b = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    b.load_state_dict(a.state_dict())
    return a, b


def test_a_copy_is_at_distance_zero():
    a, b = _pair()
    assert parameter_distance(b, a) == {"max_abs": 0.0, "relative_l2": 0.0, "changed": 0.0}


def test_one_changed_weight_by_hand():
    a, b = _pair()
    with torch.no_grad():
        b[0].weight[1, 2] += 0.5
    norm = math.sqrt(sum(float((p.detach().double() ** 2).sum()) for p in a.parameters()))
    out = parameter_distance(b, a)
    assert out["max_abs"] == pytest.approx(0.5)
    assert out["relative_l2"] == pytest.approx(0.5 / norm)
    assert out["changed"] == pytest.approx(1 / 11)  # 3*2 + 2 + 2*1 + 1 weights


def test_models_of_another_shape_are_refused():
    a, _ = _pair()
    other = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 1))
    with pytest.raises(ValueError, match="shape"):
        parameter_distance(other, a)
    with pytest.raises(ValueError, match="different parameters"):
        parameter_distance(torch.nn.Linear(3, 2), a)
