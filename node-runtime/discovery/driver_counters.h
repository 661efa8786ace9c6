// The names of the driver's counter files (aws-neuron-driver, neuron_sysfs_metrics.c), in one
// place: the simulator writes them, discovery and the metrics read them.
#pragma once

#include <array>

namespace torus::discovery {

// neuronN/stats/hardware/<name>: uncorrected ECC events since the driver loaded.
inline constexpr std::array<const char*, 3> kEccCounters = {
    "mem_ecc_uncorrected", "mem_ecc_repairable_uncorrected", "sram_ecc_uncorrected"};

// neuronN/neuron_coreM/stats/status/<name>/{total,present}.
inline constexpr std::array<const char*, 24> kCoreStatusCounters = {
    "success",
    "failure",
    "timeout",
    "exec_bad_input",
    "hw_error",
    "execute_completed_with_error",
    "execute_completed_with_num_error",
    "generic_error",
    "resource_error",
    "resource_nc_error",
    "execute_failed_to_queue",
    "invalid_error",
    "unsupported_neff_version",
    "oob_error",
    "hw_collectives_error",
    "hw_hbm_ue_error",
    "hw_nc_ue_error",
    "hw_dma_abort_error",
    "execute_sw_nq_overflow",
    "execute_sw_semaphore_error",
    "execute_sw_event_error",
    "execute_sw_psum_collision",
    "execute_sw_sequencer_fatal",
    "hw_repairable_hbm_ue_error"};

// neuronN/neuron_coreM/stats/other_info/<name>/{total,present}.
inline constexpr std::array<const char*, 6> kCoreOtherInfo = {"model_load_count", "reset_req_count",
                                                              "reset_fail_count", "inference_count",
                                                              "flop_count",       "nc_time_in_use"};

// neuronN/neuron_coreM/stats/memory_usage/device_mem/<category>/{total,present,peak}.
inline constexpr std::array<const char*, 11> kDeviceMemCategories = {"collectives",
                                                                     "constants",
                                                                     "dma_rings",
                                                                     "driver_memory",
                                                                     "model_code",
                                                                     "model_shared_scratchpad",
                                                                     "nonshared_scratchpad",
                                                                     "notifications",
                                                                     "runtime_memory",
                                                                     "tensors",
                                                                     "uncategorized"};

// neuronN/stats/memory_usage/host_mem/<category>/{total,present,peak}.
inline constexpr std::array<const char*, 8> kHostMemCategories = {
    "application_memory", "constants",     "dma_buffers", "dma_rings",
    "driver_memory",      "notifications", "tensors",     "uncategorized"};

}  // namespace torus::discovery
