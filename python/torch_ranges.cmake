# tracer._torch_ranges (src/torch_ranges.cc): tracer.torch's backward range
# machinery in C++, built only when torch is importable by the Python the
# module is built for (its C++ headers ship with it), and loaded only by
# that torch version; without it tracer.torch runs its Python version.
# One translation unit: about 15 s and 1 GB of compiler memory.
option(TRACER_BUILD_TORCH_RANGES "Build tracer._torch_ranges when torch is importable" ON)
if(NOT TRACER_BUILD_TORCH_RANGES)
  return()
endif()
execute_process(
  COMMAND ${Python_EXECUTABLE} -c
    "import torch, os, torch.utils.cpp_extension as c; print(torch.__version__); print(os.path.join(os.path.dirname(torch.__file__), 'include')); print(os.path.join(os.path.dirname(torch.__file__), 'lib')); print(int(torch.compiled_with_cxx11_abi()))"
  OUTPUT_VARIABLE _torch_info OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET RESULT_VARIABLE _torch_rc)
if(NOT _torch_rc EQUAL 0)
  message(STATUS "tracer: torch not importable by ${Python_EXECUTABLE}: no tracer._torch_ranges "
                 "(tracer.torch uses its Python hooks)")
  return()
endif()
string(REPLACE "\n" ";" _torch_info "${_torch_info}")
list(GET _torch_info 0 _torch_version)
list(GET _torch_info 1 _torch_include)
list(GET _torch_info 2 _torch_lib)
list(GET _torch_info 3 _torch_cxx11_abi)
set(_torch_libs)
foreach(_lib torch_python torch_cpu c10)
  find_library(_torch_${_lib} NAMES ${_lib} PATHS ${_torch_lib} NO_DEFAULT_PATH)
  if(NOT _torch_${_lib})
    message(STATUS "tracer: lib${_lib} not found in ${_torch_lib}: no tracer._torch_ranges")
    return()
  endif()
  list(APPEND _torch_libs ${_torch_${_lib}})
endforeach()
find_path(TRACER_NVTX3_INCLUDE nvtx3/nvToolsExt.h
          HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)

Python_add_library(tracer_torch_ranges MODULE WITH_SOABI src/torch_ranges.cc)
set_target_properties(tracer_torch_ranges PROPERTIES OUTPUT_NAME _torch_ranges
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/tracer
                      BUILD_RPATH ${_torch_lib})
target_include_directories(tracer_torch_ranges SYSTEM PRIVATE ${_torch_include}
                           ${_torch_include}/torch/csrc/api/include)
target_compile_definitions(tracer_torch_ranges PRIVATE
                           TRACER_TORCH_VERSION="${_torch_version}"
                           _GLIBCXX_USE_CXX11_ABI=${_torch_cxx11_abi})
if(TRACER_NVTX3_INCLUDE)
  target_include_directories(tracer_torch_ranges SYSTEM PRIVATE ${TRACER_NVTX3_INCLUDE})
  target_compile_definitions(tracer_torch_ranges PRIVATE TRACER_TORCH_RANGES_NVTX)
endif()
target_link_libraries(tracer_torch_ranges PRIVATE ${_torch_libs})
message(STATUS "tracer: tracer._torch_ranges for torch ${_torch_version}")
if(_standalone)
  # pip install ./python --no-build-isolation, with torch in that environment.
  set_target_properties(tracer_torch_ranges PROPERTIES INSTALL_RPATH ${_torch_lib})
  install(TARGETS tracer_torch_ranges LIBRARY DESTINATION tracer)
endif()
