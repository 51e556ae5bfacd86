module @lse_model {
  util.global private @p_lm_head_weight = #stream.parameter.named<"model"::"lm_head.weight"> : tensor<259x48xf32>
  util.global private @p_model_embed_tokens_weight = #stream.parameter.named<"model"::"model.embed_tokens.weight"> : tensor<259x48xf32>
  util.global private @p_model_layers_0_input_layernorm_weight = #stream.parameter.named<"model"::"model.layers.0.input_layernorm.weight"> : tensor<48xf32>
  util.global private @p_model_layers_0_mlp_down_proj_weight = #stream.parameter.named<"model"::"model.layers.0.mlp.down_proj.weight"> : tensor<48x23xf32>
  util.global private @p_model_layers_0_mlp_gate_proj_weight = #stream.parameter.named<"model"::"model.layers.0.mlp.gate_proj.weight"> : tensor<23x48xf32>
  util.global private @p_model_layers_0_mlp_up_proj_weight = #stream.parameter.named<"model"::"model.layers.0.mlp.up_proj.weight"> : tensor<23x48xf32>
  util.global private @p_model_layers_0_post_attention_layernorm_weight = #stream.parameter.named<"model"::"model.layers.0.post_attention_layernorm.weight"> : tensor<48xf32>
  util.global private @p_model_layers_0_self_attn_k_proj_weight = #stream.parameter.named<"model"::"model.layers.0.self_attn.k_proj.weight"> : tensor<24x48xf32>
  util.global private @p_model_layers_0_self_attn_o_proj_weight = #stream.parameter.named<"model"::"model.layers.0.self_attn.o_proj.weight"> : tensor<48x48xf32>
  util.global private @p_model_layers_0_self_attn_q_proj_weight = #stream.parameter.named<"model"::"model.layers.0.self_attn.q_proj.weight"> : tensor<48x48xf32>
  util.global private @p_model_layers_0_self_attn_v_proj_weight = #stream.parameter.named<"model"::"model.layers.0.self_attn.v_proj.weight"> : tensor<24x48xf32>
  util.global private @p_model_norm_weight = #stream.parameter.named<"model"::"model.norm.weight"> : tensor<48xf32>
  func.func @decode_0(%arg0: tensor<2xi64>, %arg1: tensor<2xi64>, %window: i64, %cache: tensor<1x2x2x?x2x12xf32> {iree.abi.output = 0 : index}) -> (tensor<1x2x2x?x2x12xf32>, tensor<2x259xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %zero = arith.constant 0.0 : f32
    %n = tensor.dim %arg0, %c0 : tensor<2xi64>
    %window_ix = arith.index_cast %window : i64 to index
    %c0_ix = arith.constant 0 : index
    %c1_ix = arith.constant 1 : index
    %w1 = util.global.load @p_model_embed_tokens_weight : tensor<259x48xf32> loc("graph.node0":0:0)
    %e2 = tensor.empty() : tensor<2x48xf32> loc("graph.node0":0:0)
    %g3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<2xi64>) outs(%e2 : tensor<2x48xf32>) {
    ^bb0(%t: i64, %o: f32):
      %ti = arith.index_cast %t : i64 to index
      %j = linalg.index 1 : index
      %x = tensor.extract %w1[%ti, %j] : tensor<259x48xf32>
      linalg.yield %x : f32
    } -> tensor<2x48xf32> loc("graph.node0":0:0)
    %r4 = tensor.expand_shape %g3 [[0], [1, 2]] output_shape [2, 1, 48] : tensor<2x48xf32> into tensor<2x1x48xf32> loc("graph.node1":1:0)
    %e5 = tensor.empty() : tensor<2x1xf32> loc("graph.node1":1:0)
    %f6 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<2x1xf32>) -> tensor<2x1xf32> loc("graph.node1":1:0)
    %g7 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r4 : tensor<2x1x48xf32>) outs(%f6 : tensor<2x1xf32>) {
    ^bb0(%a: f32, %s: f32):
      %q = arith.mulf %a, %a : f32
      %r = arith.addf %s, %q : f32
      linalg.yield %r : f32
    } -> tensor<2x1xf32> loc("graph.node1":1:0)
    %w8 = util.global.load @p_model_layers_0_input_layernorm_weight : tensor<48xf32> loc("graph.node1":1:0)
    %e9 = tensor.empty() : tensor<2x1x48xf32> loc("graph.node1":1:0)
    %g10 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r4, %g7, %w8 : tensor<2x1x48xf32>, tensor<2x1xf32>, tensor<48xf32>) outs(%e9 : tensor<2x1x48xf32>) {
    ^bb0(%a: f32, %s: f32, %gw: f32, %o: f32):
      %cg = arith.constant 4.800000000e+01 : f32
      %ce = arith.constant 1.000000000e-05 : f32
      %m = arith.divf %s, %cg : f32
      %e = arith.addf %m, %ce : f32
      %rs = math.rsqrt %e : f32
      %t = arith.mulf %a, %rs : f32
      %u = arith.mulf %t, %gw : f32
      linalg.yield %u : f32
    } -> tensor<2x1x48xf32> loc("graph.node1":1:0)
    %r11 = tensor.collapse_shape %g10 [[0], [1, 2]] : tensor<2x1x48xf32> into tensor<2x48xf32> loc("graph.node1":1:0)
    %w12 = util.global.load @p_model_layers_0_self_attn_q_proj_weight : tensor<48x48xf32> loc("graph.node2":2:0)
    %e13 = tensor.empty() : tensor<2x48xf32> loc("graph.node2":2:0)
    %f14 = linalg.fill ins(%zero : f32) outs(%e13 : tensor<2x48xf32>) -> tensor<2x48xf32> loc("graph.node2":2:0)
    %g15 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r11, %w12 : tensor<2x48xf32>, tensor<48x48xf32>) outs(%f14 : tensor<2x48xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x48xf32> loc("graph.node2":2:0)
    %e16 = tensor.empty() : tensor<2x12xf32> loc("graph.node3":3:0)
    %g17 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<2xi64>) outs(%e16 : tensor<2x12xf32>) {
    ^bb0(%p: i64, %o: f32):
      %j = linalg.index 1 : index
      %half = arith.constant 6 : index
      %k = arith.remui %j, %half : index
      %ki = arith.index_cast %k : index to i64
      %kf = arith.sitofp %ki : i64 to f32
      %base = arith.constant 1.000000000e+04 : f32
      %sc = arith.constant -1.666666667e-01 : f32
      %ex = arith.mulf %kf, %sc : f32
      %fr = math.powf %base, %ex : f32
      %pf = arith.sitofp %p : i64 to f32
      %ang = arith.mulf %pf, %fr : f32
      %cs = math.cos %ang : f32
      linalg.yield %cs : f32
    } -> tensor<2x12xf32> loc("graph.node3":3:0)
    %e18 = tensor.empty() : tensor<2x12xf32> loc("graph.node3":3:0)
    %g19 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<2xi64>) outs(%e18 : tensor<2x12xf32>) {
    ^bb0(%p: i64, %o: f32):
      %j = linalg.index 1 : index
      %half = arith.constant 6 : index
      %k = arith.remui %j, %half : index
      %ki = arith.index_cast %k : index to i64
      %kf = arith.sitofp %ki : i64 to f32
      %base = arith.constant 1.000000000e+04 : f32
      %sc = arith.constant -1.666666667e-01 : f32
      %ex = arith.mulf %kf, %sc : f32
      %fr = math.powf %base, %ex : f32
      %pf = arith.sitofp %p : i64 to f32
      %ang = arith.mulf %pf, %fr : f32
      %sn = math.sin %ang : f32
      %lo = arith.cmpi ult, %j, %half : index
      %ng = arith.negf %sn : f32
      %r = arith.select %lo, %ng, %sn : f32
      linalg.yield %r : f32
    } -> tensor<2x12xf32> loc("graph.node3":3:0)
    %r20 = tensor.expand_shape %g15 [[0], [1, 2, 3]] output_shape [2, 4, 2, 6] : tensor<2x48xf32> into tensor<2x4x2x6xf32> loc("graph.node3":3:0)
    %lo21 = tensor.extract_slice %r20[0, 0, 0, 0] [2, 4, 1, 6] [1, 1, 1, 1] : tensor<2x4x2x6xf32> to tensor<2x4x6xf32> loc("graph.node3":3:0)
    %hi22 = tensor.extract_slice %r20[0, 0, 1, 0] [2, 4, 1, 6] [1, 1, 1, 1] : tensor<2x4x2x6xf32> to tensor<2x4x6xf32> loc("graph.node3":3:0)
    %r23 = tensor.expand_shape %g17 [[0], [1, 2]] output_shape [2, 2, 6] : tensor<2x12xf32> into tensor<2x2x6xf32> loc("graph.node3":3:0)
    %r24 = tensor.expand_shape %g19 [[0], [1, 2]] output_shape [2, 2, 6] : tensor<2x12xf32> into tensor<2x2x6xf32> loc("graph.node3":3:0)
    %e25 = tensor.empty() : tensor<2x4x2x6xf32> loc("graph.node3":3:0)
    %g26 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r20, %lo21, %hi22, %r23, %r24 : tensor<2x4x2x6xf32>, tensor<2x4x6xf32>, tensor<2x4x6xf32>, tensor<2x2x6xf32>, tensor<2x2x6xf32>) outs(%e25 : tensor<2x4x2x6xf32>) {
    ^bb0(%xv: f32, %xl: f32, %xh: f32, %cs: f32, %sn: f32, %o: f32):
      %w = linalg.index 2 : index
      %z = arith.constant 0 : index
      %first = arith.cmpi eq, %w, %z : index
      %xp = arith.select %first, %xh, %xl : f32
      %a = arith.mulf %xv, %cs : f32
      %b = arith.mulf %xp, %sn : f32
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<2x4x2x6xf32> loc("graph.node3":3:0)
    %r27 = tensor.collapse_shape %g26 [[0], [1, 2, 3]] : tensor<2x4x2x6xf32> into tensor<2x48xf32> loc("graph.node3":3:0)
    %w28 = util.global.load @p_model_layers_0_self_attn_k_proj_weight : tensor<24x48xf32> loc("graph.node4":4:0)
    %e29 = tensor.empty() : tensor<2x24xf32> loc("graph.node4":4:0)
    %f30 = linalg.fill ins(%zero : f32) outs(%e29 : tensor<2x24xf32>) -> tensor<2x24xf32> loc("graph.node4":4:0)
    %g31 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r11, %w28 : tensor<2x48xf32>, tensor<24x48xf32>) outs(%f30 : tensor<2x24xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x24xf32> loc("graph.node4":4:0)
    %r32 = tensor.expand_shape %g31 [[0], [1, 2, 3]] output_shape [2, 2, 2, 6] : tensor<2x24xf32> into tensor<2x2x2x6xf32> loc("graph.node5":5:0)
    %lo33 = tensor.extract_slice %r32[0, 0, 0, 0] [2, 2, 1, 6] [1, 1, 1, 1] : tensor<2x2x2x6xf32> to tensor<2x2x6xf32> loc("graph.node5":5:0)
    %hi34 = tensor.extract_slice %r32[0, 0, 1, 0] [2, 2, 1, 6] [1, 1, 1, 1] : tensor<2x2x2x6xf32> to tensor<2x2x6xf32> loc("graph.node5":5:0)
    %r35 = tensor.expand_shape %g17 [[0], [1, 2]] output_shape [2, 2, 6] : tensor<2x12xf32> into tensor<2x2x6xf32> loc("graph.node5":5:0)
    %r36 = tensor.expand_shape %g19 [[0], [1, 2]] output_shape [2, 2, 6] : tensor<2x12xf32> into tensor<2x2x6xf32> loc("graph.node5":5:0)
    %e37 = tensor.empty() : tensor<2x2x2x6xf32> loc("graph.node5":5:0)
    %g38 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r32, %lo33, %hi34, %r35, %r36 : tensor<2x2x2x6xf32>, tensor<2x2x6xf32>, tensor<2x2x6xf32>, tensor<2x2x6xf32>, tensor<2x2x6xf32>) outs(%e37 : tensor<2x2x2x6xf32>) {
    ^bb0(%xv: f32, %xl: f32, %xh: f32, %cs: f32, %sn: f32, %o: f32):
      %w = linalg.index 2 : index
      %z = arith.constant 0 : index
      %first = arith.cmpi eq, %w, %z : index
      %xp = arith.select %first, %xh, %xl : f32
      %a = arith.mulf %xv, %cs : f32
      %b = arith.mulf %xp, %sn : f32
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<2x2x2x6xf32> loc("graph.node5":5:0)
    %r39 = tensor.collapse_shape %g38 [[0], [1, 2, 3]] : tensor<2x2x2x6xf32> into tensor<2x24xf32> loc("graph.node5":5:0)
    %w40 = util.global.load @p_model_layers_0_self_attn_v_proj_weight : tensor<24x48xf32> loc("graph.node6":6:0)
    %e41 = tensor.empty() : tensor<2x24xf32> loc("graph.node6":6:0)
    %f42 = linalg.fill ins(%zero : f32) outs(%e41 : tensor<2x24xf32>) -> tensor<2x24xf32> loc("graph.node6":6:0)
    %g43 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r11, %w40 : tensor<2x48xf32>, tensor<24x48xf32>) outs(%f42 : tensor<2x24xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x24xf32> loc("graph.node6":6:0)
    %r44 = tensor.expand_shape %r39 [[0], [1, 2]] output_shape [2, 2, 12] : tensor<2x24xf32> into tensor<2x2x12xf32> loc("graph.node7":7:0)
    %r45 = tensor.expand_shape %g43 [[0], [1, 2]] output_shape [2, 2, 12] : tensor<2x24xf32> into tensor<2x2x12xf32> loc("graph.node7":7:0)
    %el46 = tensor.extract %arg1[%c0_ix] : tensor<2xi64> loc("graph.node7":7:0)
    %ix47 = arith.index_cast %el46 : i64 to index loc("graph.node7":7:0)
    %row48 = tensor.extract_slice %r44[0, 0, 0] [1, 2, 12] [1, 1, 1] : tensor<2x2x12xf32> to tensor<2x12xf32> loc("graph.node7":7:0)
    %cache49 = tensor.insert_slice %row48 into %cache[0, 0, 0, %ix47, 0, 0] [1, 1, 1, 1, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<2x12xf32> into tensor<1x2x2x?x2x12xf32> loc("graph.node7":7:0)
    %row50 = tensor.extract_slice %r45[0, 0, 0] [1, 2, 12] [1, 1, 1] : tensor<2x2x12xf32> to tensor<2x12xf32> loc("graph.node7":7:0)
    %cache51 = tensor.insert_slice %row50 into %cache49[0, 1, 0, %ix47, 0, 0] [1, 1, 1, 1, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<2x12xf32> into tensor<1x2x2x?x2x12xf32> loc("graph.node7":7:0)
    %el52 = tensor.extract %arg1[%c1_ix] : tensor<2xi64> loc("graph.node7":7:0)
    %ix53 = arith.index_cast %el52 : i64 to index loc("graph.node7":7:0)
    %row54 = tensor.extract_slice %r44[1, 0, 0] [1, 2, 12] [1, 1, 1] : tensor<2x2x12xf32> to tensor<2x12xf32> loc("graph.node7":7:0)
    %cache55 = tensor.insert_slice %row54 into %cache51[0, 0, 1, %ix53, 0, 0] [1, 1, 1, 1, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<2x12xf32> into tensor<1x2x2x?x2x12xf32> loc("graph.node7":7:0)
    %row56 = tensor.extract_slice %r45[1, 0, 0] [1, 2, 12] [1, 1, 1] : tensor<2x2x12xf32> to tensor<2x12xf32> loc("graph.node7":7:0)
    %cache57 = tensor.insert_slice %row56 into %cache55[0, 1, 1, %ix53, 0, 0] [1, 1, 1, 1, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<2x12xf32> into tensor<1x2x2x?x2x12xf32> loc("graph.node7":7:0)
    %kvw58 = tensor.extract_slice %cache57[0, 0, 0, 0, 0, 0] [1, 1, 2, %window_ix, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<1x2x2x?x2x12xf32> to tensor<2x?x2x12xf32> loc("graph.node7":7:0)
    %kvw59 = tensor.extract_slice %cache57[0, 1, 0, 0, 0, 0] [1, 1, 2, %window_ix, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<1x2x2x?x2x12xf32> to tensor<2x?x2x12xf32> loc("graph.node7":7:0)
    %r60 = tensor.expand_shape %r27 [[0], [1, 2, 3]] output_shape [2, 2, 2, 12] : tensor<2x48xf32> into tensor<2x2x2x12xf32> loc("graph.node7":7:0)
    %e61 = tensor.empty(%window_ix) : tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %f62 = linalg.fill ins(%zero : f32) outs(%e61 : tensor<2x2x2x?xf32>) -> tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %g63 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%r60, %kvw58 : tensor<2x2x2x12xf32>, tensor<2x?x2x12xf32>) outs(%f62 : tensor<2x2x2x?xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %e64 = tensor.empty(%window_ix) : tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %g65 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g63, %arg1 : tensor<2x2x2x?xf32>, tensor<2xi64>) outs(%e64 : tensor<2x2x2x?xf32>) {
    ^bb0(%a: f32, %p: i64, %o: f32):
      %t = linalg.index 3 : index
      %ti = arith.index_cast %t : index to i64
      %ok = arith.cmpi sle, %ti, %p : i64
      %sc = arith.constant 2.886751346e-01 : f32
      %sa = arith.mulf %a, %sc : f32
      %ninf = arith.constant 0xFF800000 : f32
      %r = arith.select %ok, %sa, %ninf : f32
      linalg.yield %r : f32
    } -> tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %e66 = tensor.empty(%window_ix) : tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %probs67 = linalg.softmax dimension(3) ins(%g65 : tensor<2x2x2x?xf32>) outs(%e66 : tensor<2x2x2x?xf32>) -> tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %e68 = tensor.empty() : tensor<2x2x2x12xf32> loc("graph.node7":7:0)
    %f69 = linalg.fill ins(%zero : f32) outs(%e68 : tensor<2x2x2x12xf32>) -> tensor<2x2x2x12xf32> loc("graph.node7":7:0)
    %g70 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%probs67, %kvw59 : tensor<2x2x2x?xf32>, tensor<2x?x2x12xf32>) outs(%f69 : tensor<2x2x2x12xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x2x2x12xf32> loc("graph.node7":7:0)
    %r71 = tensor.collapse_shape %g70 [[0], [1, 2, 3]] : tensor<2x2x2x12xf32> into tensor<2x48xf32> loc("graph.node7":7:0)
    %w72 = util.global.load @p_model_layers_0_self_attn_o_proj_weight : tensor<48x48xf32> loc("graph.node8":8:0)
    %e73 = tensor.empty() : tensor<2x48xf32> loc("graph.node8":8:0)
    %f74 = linalg.fill ins(%zero : f32) outs(%e73 : tensor<2x48xf32>) -> tensor<2x48xf32> loc("graph.node8":8:0)
    %g75 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r71, %w72 : tensor<2x48xf32>, tensor<48x48xf32>) outs(%f74 : tensor<2x48xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x48xf32> loc("graph.node8":8:0)
    %e76 = tensor.empty() : tensor<2x48xf32> loc("graph.node9":9:0)
    %g77 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g3, %g75 : tensor<2x48xf32>, tensor<2x48xf32>) outs(%e76 : tensor<2x48xf32>) {
    ^bb0(%a0: f32, %a1: f32, %o: f32):
      %s = arith.addf %a0, %a1 : f32
      linalg.yield %s : f32
    } -> tensor<2x48xf32> loc("graph.node9":9:0)
    %r78 = tensor.expand_shape %g77 [[0], [1, 2]] output_shape [2, 1, 48] : tensor<2x48xf32> into tensor<2x1x48xf32> loc("graph.node10":10:0)
    %e79 = tensor.empty() : tensor<2x1xf32> loc("graph.node10":10:0)
    %f80 = linalg.fill ins(%zero : f32) outs(%e79 : tensor<2x1xf32>) -> tensor<2x1xf32> loc("graph.node10":10:0)
    %g81 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r78 : tensor<2x1x48xf32>) outs(%f80 : tensor<2x1xf32>) {
    ^bb0(%a: f32, %s: f32):
      %q = arith.mulf %a, %a : f32
      %r = arith.addf %s, %q : f32
      linalg.yield %r : f32
    } -> tensor<2x1xf32> loc("graph.node10":10:0)
    %w82 = util.global.load @p_model_layers_0_post_attention_layernorm_weight : tensor<48xf32> loc("graph.node10":10:0)
    %e83 = tensor.empty() : tensor<2x1x48xf32> loc("graph.node10":10:0)
    %g84 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r78, %g81, %w82 : tensor<2x1x48xf32>, tensor<2x1xf32>, tensor<48xf32>) outs(%e83 : tensor<2x1x48xf32>) {
    ^bb0(%a: f32, %s: f32, %gw: f32, %o: f32):
      %cg = arith.constant 4.800000000e+01 : f32
      %ce = arith.constant 1.000000000e-05 : f32
      %m = arith.divf %s, %cg : f32
      %e = arith.addf %m, %ce : f32
      %rs = math.rsqrt %e : f32
      %t = arith.mulf %a, %rs : f32
      %u = arith.mulf %t, %gw : f32
      linalg.yield %u : f32
    } -> tensor<2x1x48xf32> loc("graph.node10":10:0)
    %r85 = tensor.collapse_shape %g84 [[0], [1, 2]] : tensor<2x1x48xf32> into tensor<2x48xf32> loc("graph.node10":10:0)
    %w86 = util.global.load @p_model_layers_0_mlp_gate_proj_weight : tensor<23x48xf32> loc("graph.node11":11:0)
    %e87 = tensor.empty() : tensor<2x23xf32> loc("graph.node11":11:0)
    %f88 = linalg.fill ins(%zero : f32) outs(%e87 : tensor<2x23xf32>) -> tensor<2x23xf32> loc("graph.node11":11:0)
    %g89 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r85, %w86 : tensor<2x48xf32>, tensor<23x48xf32>) outs(%f88 : tensor<2x23xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x23xf32> loc("graph.node11":11:0)
    %w90 = util.global.load @p_model_layers_0_mlp_up_proj_weight : tensor<23x48xf32> loc("graph.node12":12:0)
    %e91 = tensor.empty() : tensor<2x23xf32> loc("graph.node12":12:0)
    %f92 = linalg.fill ins(%zero : f32) outs(%e91 : tensor<2x23xf32>) -> tensor<2x23xf32> loc("graph.node12":12:0)
    %g93 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r85, %w90 : tensor<2x48xf32>, tensor<23x48xf32>) outs(%f92 : tensor<2x23xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x23xf32> loc("graph.node12":12:0)
    %e94 = tensor.empty() : tensor<2x23xf32> loc("graph.node13":13:0)
    %g95 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g89 : tensor<2x23xf32>) outs(%e94 : tensor<2x23xf32>) {
    ^bb0(%a0: f32, %o: f32):
      %one = arith.constant 1.0 : f32
      %ng = arith.negf %a0 : f32
      %ex = math.exp %ng : f32
      %den = arith.addf %one, %ex : f32
      %s = arith.divf %a0, %den : f32
      linalg.yield %s : f32
    } -> tensor<2x23xf32> loc("graph.node13":13:0)
    %e96 = tensor.empty() : tensor<2x23xf32> loc("graph.node14":14:0)
    %g97 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g95, %g93 : tensor<2x23xf32>, tensor<2x23xf32>) outs(%e96 : tensor<2x23xf32>) {
    ^bb0(%a0: f32, %a1: f32, %o: f32):
      %s = arith.mulf %a0, %a1 : f32
      linalg.yield %s : f32
    } -> tensor<2x23xf32> loc("graph.node14":14:0)
    %w98 = util.global.load @p_model_layers_0_mlp_down_proj_weight : tensor<48x23xf32> loc("graph.node15":15:0)
    %e99 = tensor.empty() : tensor<2x48xf32> loc("graph.node15":15:0)
    %f100 = linalg.fill ins(%zero : f32) outs(%e99 : tensor<2x48xf32>) -> tensor<2x48xf32> loc("graph.node15":15:0)
    %g101 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%g97, %w98 : tensor<2x23xf32>, tensor<48x23xf32>) outs(%f100 : tensor<2x48xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x48xf32> loc("graph.node15":15:0)
    %e102 = tensor.empty() : tensor<2x48xf32> loc("graph.node16":16:0)
    %g103 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g77, %g101 : tensor<2x48xf32>, tensor<2x48xf32>) outs(%e102 : tensor<2x48xf32>) {
    ^bb0(%a0: f32, %a1: f32, %o: f32):
      %s = arith.addf %a0, %a1 : f32
      linalg.yield %s : f32
    } -> tensor<2x48xf32> loc("graph.node16":16:0)
    %r104 = tensor.expand_shape %g103 [[0], [1, 2]] output_shape [2, 1, 48] : tensor<2x48xf32> into tensor<2x1x48xf32> loc("graph.node17":17:0)
    %e105 = tensor.empty() : tensor<2x1xf32> loc("graph.node17":17:0)
    %f106 = linalg.fill ins(%zero : f32) outs(%e105 : tensor<2x1xf32>) -> tensor<2x1xf32> loc("graph.node17":17:0)
    %g107 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r104 : tensor<2x1x48xf32>) outs(%f106 : tensor<2x1xf32>) {
    ^bb0(%a: f32, %s: f32):
      %q = arith.mulf %a, %a : f32
      %r = arith.addf %s, %q : f32
      linalg.yield %r : f32
    } -> tensor<2x1xf32> loc("graph.node17":17:0)
    %w108 = util.global.load @p_model_norm_weight : tensor<48xf32> loc("graph.node17":17:0)
    %e109 = tensor.empty() : tensor<2x1x48xf32> loc("graph.node17":17:0)
    %g110 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r104, %g107, %w108 : tensor<2x1x48xf32>, tensor<2x1xf32>, tensor<48xf32>) outs(%e109 : tensor<2x1x48xf32>) {
    ^bb0(%a: f32, %s: f32, %gw: f32, %o: f32):
      %cg = arith.constant 4.800000000e+01 : f32
      %ce = arith.constant 1.000000000e-05 : f32
      %m = arith.divf %s, %cg : f32
      %e = arith.addf %m, %ce : f32
      %rs = math.rsqrt %e : f32
      %t = arith.mulf %a, %rs : f32
      %u = arith.mulf %t, %gw : f32
      linalg.yield %u : f32
    } -> tensor<2x1x48xf32> loc("graph.node17":17:0)
    %r111 = tensor.collapse_shape %g110 [[0], [1, 2]] : tensor<2x1x48xf32> into tensor<2x48xf32> loc("graph.node17":17:0)
    %w112 = util.global.load @p_lm_head_weight : tensor<259x48xf32> loc("graph.node18":18:0)
    %e113 = tensor.empty() : tensor<2x259xf32> loc("graph.node18":18:0)
    %f114 = linalg.fill ins(%zero : f32) outs(%e113 : tensor<2x259xf32>) -> tensor<2x259xf32> loc("graph.node18":18:0)
    %g115 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r111, %w112 : tensor<2x48xf32>, tensor<259x48xf32>) outs(%f114 : tensor<2x259xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x259xf32> loc("graph.node18":18:0)
    return %cache57, %g115 : tensor<1x2x2x?x2x12xf32>, tensor<2x259xf32>
  }
}
