// tracer._core: the Python binding of the analysis library. The Python
// package (tracer/__init__.py) wraps it; see python/README.md.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "trace_handle.h"

namespace nb = nanobind;
using tracer::python::LoadOptions;
using tracer::python::ReportRequest;
using tracer::python::TraceError;
using tracer::python::TraceHandle;

NB_MODULE(_core, m) {
  m.doc() = "tracer's C++ reader and analysis (use the tracer package, not this module)";
  nb::exception<TraceError>(m, "TraceError", PyExc_ValueError);
  m.attr("source_groups_dir") = TRACER_SOURCE_GROUPS_DIR;

  nb::class_<LoadOptions>(m, "LoadOptions")
      .def(nb::init<>())
      .def_rw("paths", &LoadOptions::paths)
      .def_rw("ranks", &LoadOptions::ranks)
      .def_rw("pids", &LoadOptions::pids)
      .def_rw("steps", &LoadOptions::steps)
      .def_rw("time", &LoadOptions::time)
      .def_rw("step_range", &LoadOptions::step_range)
      .def_rw("main_thread", &LoadOptions::main_thread)
      .def_rw("raw_names", &LoadOptions::raw_names)
      .def_rw("name_rules", &LoadOptions::name_rules);

  nb::class_<ReportRequest>(m, "ReportRequest")
      .def(nb::init<>())
      .def_rw("tables", &ReportRequest::tables)
      .def_rw("top", &ReportRequest::top)
      .def_rw("sort", &ReportRequest::sort)
      .def_rw("filter", &ReportRequest::filter)
      .def_rw("domain", &ReportRequest::domain)
      .def_rw("by", &ReportRequest::by)
      .def_rw("by_process", &ReportRequest::by_process)
      .def_rw("groups_file", &ReportRequest::groups_file)
      .def_rw("step_range", &ReportRequest::step_range)
      .def_rw("iteration", &ReportRequest::iteration)
      .def_rw("phase_rules", &ReportRequest::phase_rules)
      .def_rw("category_rules", &ReportRequest::category_rules)
      .def_rw("ranks", &ReportRequest::ranks)
      .def_rw("pids", &ReportRequest::pids)
      .def_rw("steps", &ReportRequest::steps)
      .def_rw("time", &ReportRequest::time)
      .def_rw("main_thread", &ReportRequest::main_thread);

  nb::class_<TraceHandle>(m, "TraceHandle")
      .def(nb::init<const LoadOptions&>())
      .def_prop_ro("warnings", &TraceHandle::warnings)
      .def_prop_ro("selection_note", &TraceHandle::selection_note)
      .def("processes", &TraceHandle::Processes)
      .def("ranges", &TraceHandle::Ranges)
      .def("gpu_ops", &TraceHandle::GpuOps)
      .def("api_calls", &TraceHandle::ApiCalls)
      .def("pm_samples", &TraceHandle::PmSamples)
      .def("report", &TraceHandle::Report);
}
