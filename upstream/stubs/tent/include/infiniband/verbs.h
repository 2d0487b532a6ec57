// Stand-in, written for shmbench, for libibverbs' <infiniband/verbs.h>, so
// that TENT's CPU platform (kvcache-ai/Mooncake, mooncake-transfer-engine/
// tent/src/platform/cpu_probe.cpp) compiles from the user's Mooncake without
// rdma-core (docs/upstream.md). It stands in for the NIC probe only: the
// device list is always empty, as on a machine without RDMA NICs (this one),
// so the probe finds no NIC, TENT's topology holds only memory entries and
// its transport selection never considers RDMA. The types carry just the
// fields cpu_probe.cpp reads; no function here opens anything.
#pragma once

#include <cstdint>

enum ibv_port_state { IBV_PORT_NOP = 0, IBV_PORT_DOWN = 1, IBV_PORT_INIT = 2, IBV_PORT_ARMED = 3, IBV_PORT_ACTIVE = 4 };

struct ibv_device {
    char name[64];
    char dev_name[64];
};
struct ibv_context {
    struct ibv_device *device;
};
struct ibv_device_attr {
    uint8_t phys_port_cnt;
};
struct ibv_port_attr {
    enum ibv_port_state state;
    int gid_tbl_len;
};

inline struct ibv_device **ibv_get_device_list(int *num_devices)
{
    static struct ibv_device *none[1] = {nullptr};
    if (num_devices)
        *num_devices = 0;
    return none;
}
inline void ibv_free_device_list(struct ibv_device **) {}
inline const char *ibv_get_device_name(struct ibv_device *device) { return device ? device->name : ""; }
inline struct ibv_context *ibv_open_device(struct ibv_device *) { return nullptr; }
inline int ibv_close_device(struct ibv_context *) { return 0; }
inline int ibv_query_device(struct ibv_context *, struct ibv_device_attr *) { return -1; }
inline int ibv_query_port(struct ibv_context *, uint8_t, struct ibv_port_attr *) { return -1; }
