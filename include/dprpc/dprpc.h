/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * dprpc: PyTorch-style RPC over DPDK.  The umbrella header.
 */
#ifndef DPRPC_H
#define DPRPC_H

#include <dprpc/dprpc_version.h>
#include <dprpc/dprpc_future.h>
#include <dprpc/dprpc_eal.h>
#include <dprpc/dprpc_agent.h>
#include <dprpc/dprpc_world.h>
#include <dprpc/dprpc_stats.h>
#include <dprpc/dprpc_rpc.h>
#include <dprpc/dprpc_handler.h>
#include <dprpc/dprpc_rref.h>
#include <dprpc/dprpc_collective.h>
#include <dprpc/dprpc_stream.h>
#include <dprpc/dprpc_launch.h>

#endif /* DPRPC_H */
