
        #include <chrono>
        #include <pybind11/pybind11.h>
        #include <pybind11/stl.h>
        #include <gridtools/storage/adapter/python_sid_adapter.hpp>
        #include <gridtools/stencil/cartesian.hpp>
        #include <gridtools/stencil/global_parameter.hpp>
        #include <gridtools/sid/sid_shift_origin.hpp>
        #include <gridtools/sid/rename_dimensions.hpp>
        #include "computation.hpp"
        namespace gt = gridtools;
        namespace py = ::pybind11;
        PYBIND11_MODULE(m_cosmo_hvdiff__gtcpu_kfirst_bf9a10f2d7_pyext, m) {
            m.def("run_computation", [](
            std::array<gt::uint_t, 3> domain,py::buffer f_t, std::array<gt::int_t,3> f_t_origin,py::buffer f_mask, std::array<gt::int_t,3> f_mask_origin,py::buffer f_kv, std::array<gt::int_t,3> f_kv_origin,py::buffer f_tnew, std::array<gt::int_t,3> f_tnew_origin,double s_dt,double s_rdz2,double s_hdc,py::object exec_info
            ){
                if (!exec_info.is(py::none()))
                {
                    auto exec_info_dict = exec_info.cast<py::dict>();
                    exec_info_dict["run_cpp_start_time"] = static_cast<double>(
                        std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::high_resolution_clock::now().time_since_epoch()).count())/1e9;
                }

                cosmo_hvdiff(domain)(gt::sid::shift_sid_origin(gt::as_sid<double, 3,
        gt::integral_constant<int, 1>>(f_t), f_t_origin),gt::sid::shift_sid_origin(gt::as_sid<double, 3,
        gt::integral_constant<int, 2>>(f_mask), f_mask_origin),gt::sid::shift_sid_origin(gt::as_sid<double, 3,
        gt::integral_constant<int, 3>>(f_kv), f_kv_origin),gt::sid::shift_sid_origin(gt::as_sid<double, 3,
        gt::integral_constant<int, 4>>(f_tnew), f_tnew_origin),gridtools::stencil::global_parameter(s_dt),gridtools::stencil::global_parameter(s_rdz2),gridtools::stencil::global_parameter(s_hdc));

                if (!exec_info.is(py::none()))
                {
                    auto exec_info_dict = exec_info.cast<py::dict>();
                    exec_info_dict["run_cpp_end_time"] = static_cast<double>(
                        std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::high_resolution_clock::now().time_since_epoch()).count()/1e9);
                }

            }, "Runs the given computation");}
        