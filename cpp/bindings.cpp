// The compiled module posenc._native: threads, ISA selection and every
// family's kernels. Thin glue only: the maths lives in cpp/include and cpp/src.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/lane.hpp"
#include "bindings/register.hpp"
#include "posenc/dispatch.hpp"
#include "posenc/threads.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_native, m) {
    m.doc() = "posenc's compiled kernels (internal: use the posenc package)";
    m.attr("__version__") = POSENC_VERSION;

    m.def("active_isa", [] { return std::string(posenc::isa_name(posenc::active_isa())); });
    m.def("available_isas", [] {
        std::vector<std::string> names;
        for (auto isa : posenc::available_isas()) names.emplace_back(posenc::isa_name(isa));
        return names;
    });
    m.def("select_isa", &posenc::select_isa, py::arg("name"));
    m.def("bfloat16_instructions", &posenc::bfloat16_instructions);
    m.def("use_bfloat16_instructions", &posenc::use_bfloat16_instructions, py::arg("on"));
    m.def("sum_interleaves_in_registers", &posenc::sum_interleaves_in_registers);
    m.def("use_sum_interleaves_in_registers", &posenc::use_sum_interleaves_in_registers, py::arg("on"));
    m.def("prefetch_far_into_l2", &posenc::prefetch_far_into_l2);
    m.def("use_prefetch_far_into_l2", &posenc::use_prefetch_far_into_l2, py::arg("on"));
    m.def("learned_position_streams", &posenc::learned_position_streams);
    m.def("use_learned_position_streams", &posenc::use_learned_position_streams, py::arg("n"));
    m.def("sum_batches_per_item", &posenc::sum_batches_per_item);
    m.def("use_sum_batches_per_item", &posenc::use_sum_batches_per_item, py::arg("n"));
    m.def("set_num_threads", &posenc::set_num_threads, py::arg("n"));
    m.def("get_num_threads", &posenc::num_threads);
    m.def("have_openmp", &posenc::have_openmp);
    m.def("after_fork_in_child", &posenc::mark_forked_child);

    posenc::bind::lane::register_lanes(m);
    posenc::bind::register_sinusoidal(m);
    posenc::bind::register_relative(m);
    posenc::bind::register_learned(m);
    posenc::bind::register_rope(m);
    posenc::bind::register_vision(m);
    posenc::bind::register_memory(m);
    posenc::bind::register_rounding(m);
}
