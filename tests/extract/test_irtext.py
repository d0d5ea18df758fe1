"""The text side: types, layouts, attributes, constants, locations, location stripping."""

from __future__ import annotations

import math

from extract import irtext


def test_tensor_of_pointers_with_blocked_layout() -> None:
    info = irtext.parse_type(
        "tensor<64x32x!tt.ptr<f16>, #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 4], "
        "warpsPerCTA = [4, 1], order = [1, 0]}>>"
    )
    assert (info.dtype, info.shape, info.numel, info.bitwidth, info.is_pointer) == ("ptr<f16>", (64, 32), 2048, 64, True)
    layout = info.layout
    assert (layout.kind, layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta, layout.order) == (
        "blocked", (1, 8), (8, 4), (4, 1), (1, 0),
    )


def test_dot_operand_takes_numbers_of_its_mma_parent() -> None:
    info = irtext.parse_type(
        "tensor<64x16xf16, #ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, "
        "warpsPerCTA = [2, 2], instrShape = [16, 8]}>, kWidth = 2}>>"
    )
    assert (info.layout.kind, info.layout.mma_version, info.layout.instr_shape, info.layout.warps_per_cta) == (
        "dot_op", 2, (16, 8), (2, 2),
    )


def test_shared_memory_descriptor_and_scalars() -> None:
    shared = irtext.parse_type(
        "!ttg.memdesc<3x64x32xf16, #ttg.swizzled_shared<{vec = 8, perPhase = 2, maxPhase = 4, order = [1, 0]}>, "
        "#ttg.shared_memory, mutable>"
    )
    assert (shared.dtype, shared.shape, shared.layout.kind) == ("f16", (3, 64, 32), "shared")
    assert (shared.layout.swizzle_vec, shared.layout.swizzle_per_phase, shared.layout.swizzle_max_phase) == (8, 2, 4)
    assert irtext.parse_type("i1").bitwidth == 1
    assert irtext.parse_type("!tt.ptr<bf16>").dtype == "ptr<bf16>"
    assert irtext.parse_type("f8E4M3FN").bitwidth == 8
    assert irtext.parse_type("!ttg.async.token").dtype == "ttg.async.token"


def test_constants() -> None:
    assert irtext.constant_value("%c = arith.constant 256 : i32 loc(#loc1)", "i32") == 256.0
    assert irtext.constant_value("%t = arith.constant true loc(#loc1)", "i1") == 1.0
    assert irtext.constant_value("%c = arith.constant dense<-1.500000e+00> : tensor<4xf32, #blocked>", "f32") == -1.5
    assert irtext.constant_value("%c = arith.constant dense<0xFF800000> : tensor<4xf32>", "f32") == -math.inf
    assert irtext.constant_value("%c = arith.constant dense<0x7C00> : tensor<4xf16>", "f16") == math.inf
    assert irtext.constant_value("%c = arith.constant dense<[1, 2]> : tensor<2xi32>", "i32") is None


def test_attribute_dicts_nest_and_keep_strings() -> None:
    attrs = irtext.attr_dict('{a = 1 : i32, "ttg.num-warps" = 4 : i32, b, c = [1, 2], d = #x<{e = 1, f = "}"}>}')
    assert attrs == {"a": "1 : i32", "ttg.num-warps": "4 : i32", "b": "unit", "c": "[1, 2]", "d": '#x<{e = 1, f = "}"}>'}
    text = '%0 = tt.load %p {cachePolicy = #tt.cache_policy<cache_modifier = ca>} : tensor<4x!tt.ptr<f32>, #ttg.slice<{dim = 0}>>'
    assert irtext.op_attributes("tt.load", text) == {"cachePolicy": "#tt.cache_policy<cache_modifier = ca>"}


def test_locations_resolve_through_aliases() -> None:
    aliases = {
        "#loc": 'loc("k.py":10:1)',
        "#loc1": 'loc("k.py":12:5)',
        "#loc2": 'loc("acc"(#loc1))',
        "#loc3": "loc(callsite(#loc2 at #loc))",
        "#loc4": "loc(fused[#loc9, #loc1])",
    }
    resolve = irtext.LocationResolver(aliases).resolve
    assert resolve("#loc2") == irtext.SourceLoc(12, 5, "acc")
    assert resolve("#loc3") == irtext.SourceLoc(12, 5, "acc")
    assert resolve("#loc4") == irtext.SourceLoc(12, 5, None)
    assert resolve("unknown") == irtext.SourceLoc()
    assert resolve('"x_ptr"(#loc)') == irtext.SourceLoc(10, 1, "x_ptr")
    assert irtext.LocationResolver(aliases, ignore_file="k.py").resolve("#loc1") == irtext.SourceLoc()


def test_strip_locations_drops_locations_and_names() -> None:
    first = '#loc = loc("/a/k.py":3:1)\n  %offsets = arith.addi %x, %y : i32 loc(#loc)\n  tt.store %p, %offsets : !tt.ptr<i32> loc("n"("/a/k.py":4:2))\n#loc1 = loc("q")\n'
    second = '#loc = loc("/b/k.py":30:1)\n  %offs = arith.addi %x, %y : i32 loc(#loc)\n  tt.store %p, %offs : !tt.ptr<i32> loc("m"(#loc))\n'
    assert irtext.strip_locations(first) == irtext.strip_locations(second)
    assert "loc" not in irtext.strip_locations(first)
    assert irtext.strip_locations(first) != irtext.strip_locations(first.replace("addi", "subi"))
