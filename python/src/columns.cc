#include "columns.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace tracer::python {

void ColumnSet::AddDictionary(std::string name, std::vector<int32_t>&& codes,
                              const Dictionary& dict) {
  columns_.append(nb::make_tuple(std::move(name), ToNumpy(std::move(codes)), nb::none(),
                                 nb::cast(dict.names())));
}

}  // namespace tracer::python
