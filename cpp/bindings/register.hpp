// bindings/register.hpp — one registration function per kernel family.
#pragma once

#include <pybind11/pybind11.h>

namespace posenc::bind {

void register_sinusoidal(pybind11::module_& m);
void register_relative(pybind11::module_& m);
void register_learned(pybind11::module_& m);
void register_rope(pybind11::module_& m);
void register_vision(pybind11::module_& m);
void register_memory(pybind11::module_& m);
void register_rounding(pybind11::module_& m);

}  // namespace posenc::bind
