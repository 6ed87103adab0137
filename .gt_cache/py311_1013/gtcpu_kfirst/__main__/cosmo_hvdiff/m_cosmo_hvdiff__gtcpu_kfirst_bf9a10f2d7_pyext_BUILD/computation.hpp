
        #include <cstdint>
        #include <gridtools/stencil/cpu_kfirst.hpp>
        #include <gridtools/stencil/cartesian.hpp>
        #include <gridtools/common/array.hpp>
        #include <gridtools/stencil/positional.hpp>
        #include <gridtools/stencil/global_parameter.hpp>

        namespace cosmo_hvdiff_impl_{
            using Domain = std::array<gridtools::uint_t, 3>;
            using namespace gridtools::stencil;
            using namespace gridtools::stencil::cartesian;
            using gridtools::array;

            struct HorizontalExecution140316852753808 {
        using f_t = in_accessor<0, extent<-1,1,-1,1,0,0>, 3>;
using f_lap = inout_accessor<1, extent<0,0,0,0,0,0>, 3>;

        using param_list = make_param_list<f_t,f_lap>;
        

        
    template<typename Evaluation>
    GT_FUNCTION static void apply(Evaluation eval, gridtools::stencil::core::interval<gridtools::stencil::core::level<0, 1, 3>, gridtools::stencil::core::level<1, -1, 3>>) {
        
        eval(f_lap()) = ((((((-static_cast<double>(4.0)) * eval(f_t())) + eval(f_t(-1, 0, 0))) + eval(f_t(1, 0, 0))) + eval(f_t(0, -1, 0))) + eval(f_t(0, 1, 0)));
    }
    
    };
    
struct HorizontalExecution140316842741072 {
        using f_lap = in_accessor<0, extent<0,1,0,0,0,0>, 3>;
using f_t = in_accessor<1, extent<0,1,0,0,0,0>, 3>;
using f_flx = inout_accessor<2, extent<0,0,0,0,0,0>, 3>;

        using param_list = make_param_list<f_lap,f_t,f_flx>;
        

        
    template<typename Evaluation>
    GT_FUNCTION static void apply(Evaluation eval, gridtools::stencil::core::interval<gridtools::stencil::core::level<0, 1, 3>, gridtools::stencil::core::level<1, -1, 3>>) {
        double l_flx_d_gen_0;
        l_flx_d_gen_0 = (eval(f_lap(1, 0, 0)) - eval(f_lap()));
eval(f_flx()) = (((l_flx_d_gen_0 * (eval(f_t(1, 0, 0)) - eval(f_t()))) > static_cast<double>(0.0)) ? static_cast<double>(0.0) : l_flx_d_gen_0);
    }
    
    };
    
struct HorizontalExecution140316843226832 {
        using f_lap = in_accessor<0, extent<0,0,0,1,0,0>, 3>;
using f_t = in_accessor<1, extent<0,0,0,1,0,0>, 3>;
using f_fly = inout_accessor<2, extent<0,0,0,0,0,0>, 3>;

        using param_list = make_param_list<f_lap,f_t,f_fly>;
        

        
    template<typename Evaluation>
    GT_FUNCTION static void apply(Evaluation eval, gridtools::stencil::core::interval<gridtools::stencil::core::level<0, 1, 3>, gridtools::stencil::core::level<1, -1, 3>>) {
        double l_fly_d_gen_0;
        l_fly_d_gen_0 = (eval(f_lap(0, 1, 0)) - eval(f_lap()));
eval(f_fly()) = (((l_fly_d_gen_0 * (eval(f_t(0, 1, 0)) - eval(f_t()))) > static_cast<double>(0.0)) ? static_cast<double>(0.0) : l_fly_d_gen_0);
    }
    
    };
    
struct HorizontalExecution140316843214160 {
        using f_t = in_accessor<0, extent<0,0,0,0,0,0>, 3>;
using s_hdc = in_accessor<1, extent<0,0,0,0,0,0>, 3>;
using f_mask = in_accessor<2, extent<0,0,0,0,0,0>, 3>;
using f_flx = in_accessor<3, extent<-1,0,0,0,0,0>, 3>;
using f_fly = in_accessor<4, extent<0,0,-1,0,0,0>, 3>;
using f_th = inout_accessor<5, extent<0,0,0,0,0,0>, 3>;

        using param_list = make_param_list<f_t,s_hdc,f_mask,f_flx,f_fly,f_th>;
        

        
    template<typename Evaluation>
    GT_FUNCTION static void apply(Evaluation eval, gridtools::stencil::core::interval<gridtools::stencil::core::level<0, 1, 3>, gridtools::stencil::core::level<1, -1, 3>>) {
        
        eval(f_th()) = (eval(f_t()) - ((eval(s_hdc()) * eval(f_mask())) * (((eval(f_flx()) - eval(f_flx(-1, 0, 0))) + eval(f_fly())) - eval(f_fly(0, -1, 0)))));
    }
    
    };
    
struct HorizontalExecution140316842897104 {
        using s_dt = in_accessor<0, extent<0,0,0,0,0,0>, 3>;
using s_rdz2 = in_accessor<1, extent<0,0,0,0,0,0>, 3>;
using f_kv = in_accessor<2, extent<0,0,0,0,0,1>, 3>;
using f_cp = inout_accessor<3, extent<0,0,0,0,0,0>, 3>;

        using param_list = make_param_list<s_dt,s_rdz2,f_kv,f_cp>;
        

        
    template<typename Evaluation>
    GT_FUNCTION static void apply(Evaluation eval, gridtools::stencil::core::interval<gridtools::stencil::core::level<0, 1, 3>, gridtools::stencil::core::level<0, 1, 3>>) {
        double l_cp_c_gen_0;
        l_cp_c_gen_0 = ((eval(s_dt()) * eval(s_rdz2())) * eval(f_kv(0, 0, 1)));
eval(f_cp()) = ((-l_cp_c_gen_0) / (static_cast<double>(1.0) + l_cp_c_gen_0));
    }
    
    };
    
struct HorizontalExecution140316842891024 {
        using s_dt = in_accessor<0, extent<0,0,0,0,0,0>, 3>;
using s_rdz2 = in_accessor<1, extent<0,0,0,0,0,0>, 3>;
using f_kv = in_accessor<2, extent<0,0,0,0,0,1>, 3>;
using f_cp = inout_accessor<3, extent<0,0,0,0,-1,0>, 3>;

        using param_list = make_param_list<s_dt,s_rdz2,f_kv,f_cp>;
        

        
    template<typename Evaluation>
    GT_FUNCTION static void apply(Evaluation eval, gridtools::stencil::core::interval<gridtools::stencil::core::level<0, 2, 3>, gridtools::stencil::core::level<1, -2, 3>>) {
        double l_cp_a_gen_0; double l_cp_c_gen_1;
        l_cp_a_gen_0 = ((eval(s_dt()) * eval(s_rdz2())) * eval(f_kv()));
l_cp_c_gen_1 = ((eval(s_dt()) * eval(s_rdz2())) * eval(f_kv(0, 0, 1)));
eval(f_cp()) = ((-l_cp_c_gen_1) / (((static_cast<double>(1.0) + l_cp_a_gen_0) + l_cp_c_gen_1) + (l_cp_a_gen_0 * eval(f_cp(0, 0, -1)))));
    }
    
    };
    
struct HorizontalExecution140316842893840 {
        using f_cp = inout_accessor<0, extent<0,0,0,0,0,0>, 3>;

        using param_list = make_param_list<f_cp>;
        

        
    template<typename Evaluation>
    GT_FUNCTION static void apply(Evaluation eval, gridtools::stencil::core::interval<gridtools::stencil::core::level<1, -1, 3>, gridtools::stencil::core::level<1, -1, 3>>) {
        
        eval(f_cp()) = static_cast<double>(0.0);
    }
    
    };
    
struct HorizontalExecution140316842869968 {
        using s_dt = in_accessor<0, extent<0,0,0,0,0,0>, 3>;
using s_rdz2 = in_accessor<1, extent<0,0,0,0,0,0>, 3>;
using f_kv = in_accessor<2, extent<0,0,0,0,0,1>, 3>;
using f_th = in_accessor<3, extent<0,0,0,0,0,0>, 3>;
using f_dp = inout_accessor<4, extent<0,0,0,0,0,0>, 3>;

        using param_list = make_param_list<s_dt,s_rdz2,f_kv,f_th,f_dp>;
        

        
    template<typename Evaluation>
    GT_FUNCTION static void apply(Evaluation eval, gridtools::stencil::core::interval<gridtools::stencil::core::level<0, 1, 3>, gridtools::stencil::core::level<0, 1, 3>>) {
        double l_dp_c_gen_0;
        l_dp_c_gen_0 = ((eval(s_dt()) * eval(s_rdz2())) * eval(f_kv(0, 0, 1)));
eval(f_dp()) = (eval(f_th()) / (static_cast<double>(1.0) + l_dp_c_gen_0));
    }
    
    };
    
struct HorizontalExecution140316842876432 {
        using s_dt = in_accessor<0, extent<0,0,0,0,0,0>, 3>;
using s_rdz2 = in_accessor<1, extent<0,0,0,0,0,0>, 3>;
using f_kv = in_accessor<2, extent<0,0,0,0,0,1>, 3>;
using f_th = in_accessor<3, extent<0,0,0,0,0,0>, 3>;
using f_dp = inout_accessor<4, extent<0,0,0,0,-1,0>, 3>;
using f_cp = in_accessor<5, extent<0,0,0,0,-1,0>, 3>;

        using param_list = make_param_list<s_dt,s_rdz2,f_kv,f_th,f_dp,f_cp>;
        

        
    template<typename Evaluation>
    GT_FUNCTION static void apply(Evaluation eval, gridtools::stencil::core::interval<gridtools::stencil::core::level<0, 2, 3>, gridtools::stencil::core::level<1, -2, 3>>) {
        double l_dp_a_gen_0; double l_dp_c_gen_1;
        l_dp_a_gen_0 = ((eval(s_dt()) * eval(s_rdz2())) * eval(f_kv()));
l_dp_c_gen_1 = ((eval(s_dt()) * eval(s_rdz2())) * eval(f_kv(0, 0, 1)));
eval(f_dp()) = ((eval(f_th()) + (l_dp_a_gen_0 * eval(f_dp(0, 0, -1)))) / (((static_cast<double>(1.0) + l_dp_a_gen_0) + l_dp_c_gen_1) + (l_dp_a_gen_0 * eval(f_cp(0, 0, -1)))));
    }
    
    };
    
struct HorizontalExecution140316842474896 {
        using s_dt = in_accessor<0, extent<0,0,0,0,0,0>, 3>;
using s_rdz2 = in_accessor<1, extent<0,0,0,0,0,0>, 3>;
using f_kv = in_accessor<2, extent<0,0,0,0,0,0>, 3>;
using f_th = in_accessor<3, extent<0,0,0,0,0,0>, 3>;
using f_dp = inout_accessor<4, extent<0,0,0,0,-1,0>, 3>;
using f_cp = in_accessor<5, extent<0,0,0,0,-1,0>, 3>;

        using param_list = make_param_list<s_dt,s_rdz2,f_kv,f_th,f_dp,f_cp>;
        

        
    template<typename Evaluation>
    GT_FUNCTION static void apply(Evaluation eval, gridtools::stencil::core::interval<gridtools::stencil::core::level<1, -1, 3>, gridtools::stencil::core::level<1, -1, 3>>) {
        double l_dp_a_gen_1;
        l_dp_a_gen_1 = ((eval(s_dt()) * eval(s_rdz2())) * eval(f_kv()));
eval(f_dp()) = ((eval(f_th()) + (l_dp_a_gen_1 * eval(f_dp(0, 0, -1)))) / ((static_cast<double>(1.0) + l_dp_a_gen_1) + (l_dp_a_gen_1 * eval(f_cp(0, 0, -1)))));
    }
    
    };
    
struct HorizontalExecution140316843248848 {
        using f_dp = in_accessor<0, extent<0,0,0,0,0,0>, 3>;
using f_tnew = inout_accessor<1, extent<0,0,0,0,0,0>, 3>;

        using param_list = make_param_list<f_dp,f_tnew>;
        

        
    template<typename Evaluation>
    GT_FUNCTION static void apply(Evaluation eval, gridtools::stencil::core::interval<gridtools::stencil::core::level<1, -1, 3>, gridtools::stencil::core::level<1, -1, 3>>) {
        
        eval(f_tnew()) = eval(f_dp());
    }
    
    };
    
struct HorizontalExecution140316843251472 {
        using f_dp = in_accessor<0, extent<0,0,0,0,0,0>, 3>;
using f_cp = in_accessor<1, extent<0,0,0,0,0,0>, 3>;
using f_tnew = inout_accessor<2, extent<0,0,0,0,0,1>, 3>;

        using param_list = make_param_list<f_dp,f_cp,f_tnew>;
        

        
    template<typename Evaluation>
    GT_FUNCTION static void apply(Evaluation eval, gridtools::stencil::core::interval<gridtools::stencil::core::level<0, 1, 3>, gridtools::stencil::core::level<1, -2, 3>>) {
        
        eval(f_tnew()) = (eval(f_dp()) - (eval(f_cp()) * eval(f_tnew(0, 0, 1))));
    }
    
    };
    

            auto cosmo_hvdiff(Domain domain){
                return [domain](auto&& f_t,auto&& f_mask,auto&& f_kv,auto&& f_tnew,auto&& s_dt,auto&& s_rdz2,auto&& s_hdc){
                    
        {
            auto grid = make_grid(domain[0], domain[1], axis<1,
                axis_config::offset_limit<3>>{domain[2]});

            auto GTComputationCall140316842354320 = [](auto f_tnew,auto s_rdz2,auto s_dt,auto f_kv,auto s_hdc,auto f_mask,auto f_t) {

                GT_DECLARE_TMP(double, f_lap);
GT_DECLARE_TMP(double, f_flx);
GT_DECLARE_TMP(double, f_fly);
GT_DECLARE_TMP(double, f_th);
GT_DECLARE_TMP(double, f_cp);
GT_DECLARE_TMP(double, f_dp);
                return multi_pass(execute_parallel().stage(HorizontalExecution140316852753808(), f_t,f_lap),execute_parallel().stage(HorizontalExecution140316842741072(), f_lap,f_t,f_flx),execute_parallel().stage(HorizontalExecution140316843226832(), f_lap,f_t,f_fly),execute_parallel().stage(HorizontalExecution140316843214160(), f_t,s_hdc,f_mask,f_flx,f_fly,f_th),execute_forward().k_cached(cache_io_policy::fill(), f_kv).k_cached(cache_io_policy::flush(), f_cp).stage(HorizontalExecution140316842897104(), s_dt,s_rdz2,f_kv,f_cp).stage(HorizontalExecution140316842891024(), s_dt,s_rdz2,f_kv,f_cp).stage(HorizontalExecution140316842893840(), f_cp),execute_forward().k_cached(cache_io_policy::flush(), f_dp).k_cached(cache_io_policy::fill(), f_kv).stage(HorizontalExecution140316842869968(), s_dt,s_rdz2,f_kv,f_th,f_dp).stage(HorizontalExecution140316842876432(), s_dt,s_rdz2,f_kv,f_th,f_dp,f_cp).stage(HorizontalExecution140316842474896(), s_dt,s_rdz2,f_kv,f_th,f_dp,f_cp),execute_backward().k_cached(cache_io_policy::flush(), f_tnew).stage(HorizontalExecution140316843248848(), f_dp,f_tnew).stage(HorizontalExecution140316843251472(), f_dp,f_cp,f_tnew));
            };

            
            run(GTComputationCall140316842354320, cpu_kfirst<>{}, grid, std::forward<decltype(f_tnew)>(f_tnew),std::forward<decltype(s_rdz2)>(s_rdz2),std::forward<decltype(s_dt)>(s_dt),std::forward<decltype(f_kv)>(f_kv),std::forward<decltype(s_hdc)>(s_hdc),std::forward<decltype(f_mask)>(f_mask),std::forward<decltype(f_t)>(f_t));
        }
        
                };
            }
        }

        auto cosmo_hvdiff(cosmo_hvdiff_impl_::Domain domain){
            return cosmo_hvdiff_impl_::cosmo_hvdiff(domain);
        }
        