// Orders names as people expect: digit runs compare as numbers, so "layer_2"
// comes before "layer_10".
#pragma once

#include <string_view>

namespace tracer::analysis::reports {

bool NaturalLess(std::string_view a, std::string_view b);

}  // namespace tracer::analysis::reports
