"""Linear attention (math text §2.1.2, eq. 13-15): kernel feature maps and the O(n) forms.

features.py  the feature maps phi (elu+1, relu, taylor, favor+)
forms.py     non-causal, causal chunked, causal cumsum, recurrent and quadratic forms
attention.py linear_attention / recurrent_linear_attention (masks, eps, diagnostics)
taylor.py    the text's first-order Taylor formula in closed form
"""

from attnlab.ops.linear.attention import FORMS, linear_attention, recurrent_linear_attention
from attnlab.ops.linear.features import (
    FEATURE_MAPS,
    FeatureMap,
    favor_features,
    feature_map,
    gaussian_features,
)
from attnlab.ops.linear.taylor import taylor_as_printed, taylor_closed_form

__all__ = [
    "FEATURE_MAPS",
    "FORMS",
    "FeatureMap",
    "favor_features",
    "feature_map",
    "gaussian_features",
    "linear_attention",
    "recurrent_linear_attention",
    "taylor_as_printed",
    "taylor_closed_form",
]
