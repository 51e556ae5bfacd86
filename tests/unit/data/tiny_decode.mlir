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
    %r21 = tensor.expand_shape %g17 [[0], [1, 2]] output_shape [2, 2, 6] : tensor<2x12xf32> into tensor<2x2x6xf32> loc("graph.node3":3:0)
    %r22 = tensor.expand_shape %g19 [[0], [1, 2]] output_shape [2, 2, 6] : tensor<2x12xf32> into tensor<2x2x6xf32> loc("graph.node3":3:0)
    %e23 = tensor.empty() : tensor<2x4x2x6xf32> loc("graph.node3":3:0)
    %g24 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, -d2 + 1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r20, %r20, %r21, %r22 : tensor<2x4x2x6xf32>, tensor<2x4x2x6xf32>, tensor<2x2x6xf32>, tensor<2x2x6xf32>) outs(%e23 : tensor<2x4x2x6xf32>) {
    ^bb0(%xv: f32, %xp: f32, %cs: f32, %sn: f32, %o: f32):
      %a = arith.mulf %xv, %cs : f32
      %b = arith.mulf %xp, %sn : f32
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<2x4x2x6xf32> loc("graph.node3":3:0)
    %r25 = tensor.collapse_shape %g24 [[0], [1, 2, 3]] : tensor<2x4x2x6xf32> into tensor<2x48xf32> loc("graph.node3":3:0)
    %w26 = util.global.load @p_model_layers_0_self_attn_k_proj_weight : tensor<24x48xf32> loc("graph.node4":4:0)
    %e27 = tensor.empty() : tensor<2x24xf32> loc("graph.node4":4:0)
    %f28 = linalg.fill ins(%zero : f32) outs(%e27 : tensor<2x24xf32>) -> tensor<2x24xf32> loc("graph.node4":4:0)
    %g29 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r11, %w26 : tensor<2x48xf32>, tensor<24x48xf32>) outs(%f28 : tensor<2x24xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x24xf32> loc("graph.node4":4:0)
    %r30 = tensor.expand_shape %g29 [[0], [1, 2, 3]] output_shape [2, 2, 2, 6] : tensor<2x24xf32> into tensor<2x2x2x6xf32> loc("graph.node5":5:0)
    %r31 = tensor.expand_shape %g17 [[0], [1, 2]] output_shape [2, 2, 6] : tensor<2x12xf32> into tensor<2x2x6xf32> loc("graph.node5":5:0)
    %r32 = tensor.expand_shape %g19 [[0], [1, 2]] output_shape [2, 2, 6] : tensor<2x12xf32> into tensor<2x2x6xf32> loc("graph.node5":5:0)
    %e33 = tensor.empty() : tensor<2x2x2x6xf32> loc("graph.node5":5:0)
    %g34 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, -d2 + 1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%r30, %r30, %r31, %r32 : tensor<2x2x2x6xf32>, tensor<2x2x2x6xf32>, tensor<2x2x6xf32>, tensor<2x2x6xf32>) outs(%e33 : tensor<2x2x2x6xf32>) {
    ^bb0(%xv: f32, %xp: f32, %cs: f32, %sn: f32, %o: f32):
      %a = arith.mulf %xv, %cs : f32
      %b = arith.mulf %xp, %sn : f32
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<2x2x2x6xf32> loc("graph.node5":5:0)
    %r35 = tensor.collapse_shape %g34 [[0], [1, 2, 3]] : tensor<2x2x2x6xf32> into tensor<2x24xf32> loc("graph.node5":5:0)
    %w36 = util.global.load @p_model_layers_0_self_attn_v_proj_weight : tensor<24x48xf32> loc("graph.node6":6:0)
    %e37 = tensor.empty() : tensor<2x24xf32> loc("graph.node6":6:0)
    %f38 = linalg.fill ins(%zero : f32) outs(%e37 : tensor<2x24xf32>) -> tensor<2x24xf32> loc("graph.node6":6:0)
    %g39 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r11, %w36 : tensor<2x48xf32>, tensor<24x48xf32>) outs(%f38 : tensor<2x24xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x24xf32> loc("graph.node6":6:0)
    %r40 = tensor.expand_shape %r35 [[0], [1, 2]] output_shape [2, 2, 12] : tensor<2x24xf32> into tensor<2x2x12xf32> loc("graph.node7":7:0)
    %r41 = tensor.expand_shape %g39 [[0], [1, 2]] output_shape [2, 2, 12] : tensor<2x24xf32> into tensor<2x2x12xf32> loc("graph.node7":7:0)
    %el42 = tensor.extract %arg1[%c0_ix] : tensor<2xi64> loc("graph.node7":7:0)
    %ix43 = arith.index_cast %el42 : i64 to index loc("graph.node7":7:0)
    %row44 = tensor.extract_slice %r40[0, 0, 0] [1, 2, 12] [1, 1, 1] : tensor<2x2x12xf32> to tensor<2x12xf32> loc("graph.node7":7:0)
    %cache45 = tensor.insert_slice %row44 into %cache[0, 0, 0, %ix43, 0, 0] [1, 1, 1, 1, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<2x12xf32> into tensor<1x2x2x?x2x12xf32> loc("graph.node7":7:0)
    %row46 = tensor.extract_slice %r41[0, 0, 0] [1, 2, 12] [1, 1, 1] : tensor<2x2x12xf32> to tensor<2x12xf32> loc("graph.node7":7:0)
    %cache47 = tensor.insert_slice %row46 into %cache45[0, 1, 0, %ix43, 0, 0] [1, 1, 1, 1, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<2x12xf32> into tensor<1x2x2x?x2x12xf32> loc("graph.node7":7:0)
    %el48 = tensor.extract %arg1[%c1_ix] : tensor<2xi64> loc("graph.node7":7:0)
    %ix49 = arith.index_cast %el48 : i64 to index loc("graph.node7":7:0)
    %row50 = tensor.extract_slice %r40[1, 0, 0] [1, 2, 12] [1, 1, 1] : tensor<2x2x12xf32> to tensor<2x12xf32> loc("graph.node7":7:0)
    %cache51 = tensor.insert_slice %row50 into %cache47[0, 0, 1, %ix49, 0, 0] [1, 1, 1, 1, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<2x12xf32> into tensor<1x2x2x?x2x12xf32> loc("graph.node7":7:0)
    %row52 = tensor.extract_slice %r41[1, 0, 0] [1, 2, 12] [1, 1, 1] : tensor<2x2x12xf32> to tensor<2x12xf32> loc("graph.node7":7:0)
    %cache53 = tensor.insert_slice %row52 into %cache51[0, 1, 1, %ix49, 0, 0] [1, 1, 1, 1, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<2x12xf32> into tensor<1x2x2x?x2x12xf32> loc("graph.node7":7:0)
    %kvw54 = tensor.extract_slice %cache53[0, 0, 0, 0, 0, 0] [1, 1, 2, %window_ix, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<1x2x2x?x2x12xf32> to tensor<2x?x2x12xf32> loc("graph.node7":7:0)
    %kvw55 = tensor.extract_slice %cache53[0, 1, 0, 0, 0, 0] [1, 1, 2, %window_ix, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<1x2x2x?x2x12xf32> to tensor<2x?x2x12xf32> loc("graph.node7":7:0)
    %r56 = tensor.expand_shape %r25 [[0], [1, 2, 3]] output_shape [2, 2, 2, 12] : tensor<2x48xf32> into tensor<2x2x2x12xf32> loc("graph.node7":7:0)
    %e57 = tensor.empty(%window_ix) : tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %f58 = linalg.fill ins(%zero : f32) outs(%e57 : tensor<2x2x2x?xf32>) -> tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %g59 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%r56, %kvw54 : tensor<2x2x2x12xf32>, tensor<2x?x2x12xf32>) outs(%f58 : tensor<2x2x2x?xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %e60 = tensor.empty(%window_ix) : tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %g61 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g59, %arg1 : tensor<2x2x2x?xf32>, tensor<2xi64>) outs(%e60 : tensor<2x2x2x?xf32>) {
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
    %e62 = tensor.empty(%window_ix) : tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %probs63 = linalg.softmax dimension(3) ins(%g61 : tensor<2x2x2x?xf32>) outs(%e62 : tensor<2x2x2x?xf32>) -> tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %e64 = tensor.empty() : tensor<2x2x2x12xf32> loc("graph.node7":7:0)
    %f65 = linalg.fill ins(%zero : f32) outs(%e64 : tensor<2x2x2x12xf32>) -> tensor<2x2x2x12xf32> loc("graph.node7":7:0)
    %g66 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%probs63, %kvw55 : tensor<2x2x2x?xf32>, tensor<2x?x2x12xf32>) outs(%f65 : tensor<2x2x2x12xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x2x2x12xf32> loc("graph.node7":7:0)
    %r67 = tensor.collapse_shape %g66 [[0], [1, 2, 3]] : tensor<2x2x2x12xf32> into tensor<2x48xf32> loc("graph.node7":7:0)
    %w68 = util.global.load @p_model_layers_0_self_attn_o_proj_weight : tensor<48x48xf32> loc("graph.node8":8:0)
    %e69 = tensor.empty() : tensor<2x48xf32> loc("graph.node8":8:0)
    %f70 = linalg.fill ins(%zero : f32) outs(%e69 : tensor<2x48xf32>) -> tensor<2x48xf32> loc("graph.node8":8:0)
    %g71 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r67, %w68 : tensor<2x48xf32>, tensor<48x48xf32>) outs(%f70 : tensor<2x48xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x48xf32> loc("graph.node8":8:0)
    %e72 = tensor.empty() : tensor<2x48xf32> loc("graph.node9":9:0)
    %g73 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g3, %g71 : tensor<2x48xf32>, tensor<2x48xf32>) outs(%e72 : tensor<2x48xf32>) {
    ^bb0(%a0: f32, %a1: f32, %o: f32):
      %s = arith.addf %a0, %a1 : f32
      linalg.yield %s : f32
    } -> tensor<2x48xf32> loc("graph.node9":9:0)
    %r74 = tensor.expand_shape %g73 [[0], [1, 2]] output_shape [2, 1, 48] : tensor<2x48xf32> into tensor<2x1x48xf32> loc("graph.node10":10:0)
    %e75 = tensor.empty() : tensor<2x1xf32> loc("graph.node10":10:0)
    %f76 = linalg.fill ins(%zero : f32) outs(%e75 : tensor<2x1xf32>) -> tensor<2x1xf32> loc("graph.node10":10:0)
    %g77 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r74 : tensor<2x1x48xf32>) outs(%f76 : tensor<2x1xf32>) {
    ^bb0(%a: f32, %s: f32):
      %q = arith.mulf %a, %a : f32
      %r = arith.addf %s, %q : f32
      linalg.yield %r : f32
    } -> tensor<2x1xf32> loc("graph.node10":10:0)
    %w78 = util.global.load @p_model_layers_0_post_attention_layernorm_weight : tensor<48xf32> loc("graph.node10":10:0)
    %e79 = tensor.empty() : tensor<2x1x48xf32> loc("graph.node10":10:0)
    %g80 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r74, %g77, %w78 : tensor<2x1x48xf32>, tensor<2x1xf32>, tensor<48xf32>) outs(%e79 : tensor<2x1x48xf32>) {
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
    %r81 = tensor.collapse_shape %g80 [[0], [1, 2]] : tensor<2x1x48xf32> into tensor<2x48xf32> loc("graph.node10":10:0)
    %w82 = util.global.load @p_model_layers_0_mlp_gate_proj_weight : tensor<23x48xf32> loc("graph.node11":11:0)
    %e83 = tensor.empty() : tensor<2x23xf32> loc("graph.node11":11:0)
    %f84 = linalg.fill ins(%zero : f32) outs(%e83 : tensor<2x23xf32>) -> tensor<2x23xf32> loc("graph.node11":11:0)
    %g85 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r81, %w82 : tensor<2x48xf32>, tensor<23x48xf32>) outs(%f84 : tensor<2x23xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x23xf32> loc("graph.node11":11:0)
    %w86 = util.global.load @p_model_layers_0_mlp_up_proj_weight : tensor<23x48xf32> loc("graph.node12":12:0)
    %e87 = tensor.empty() : tensor<2x23xf32> loc("graph.node12":12:0)
    %f88 = linalg.fill ins(%zero : f32) outs(%e87 : tensor<2x23xf32>) -> tensor<2x23xf32> loc("graph.node12":12:0)
    %g89 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r81, %w86 : tensor<2x48xf32>, tensor<23x48xf32>) outs(%f88 : tensor<2x23xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x23xf32> loc("graph.node12":12:0)
    %e90 = tensor.empty() : tensor<2x23xf32> loc("graph.node13":13:0)
    %g91 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g85 : tensor<2x23xf32>) outs(%e90 : tensor<2x23xf32>) {
    ^bb0(%a0: f32, %o: f32):
      %one = arith.constant 1.0 : f32
      %ng = arith.negf %a0 : f32
      %ex = math.exp %ng : f32
      %den = arith.addf %one, %ex : f32
      %s = arith.divf %a0, %den : f32
      linalg.yield %s : f32
    } -> tensor<2x23xf32> loc("graph.node13":13:0)
    %e92 = tensor.empty() : tensor<2x23xf32> loc("graph.node14":14:0)
    %g93 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g91, %g89 : tensor<2x23xf32>, tensor<2x23xf32>) outs(%e92 : tensor<2x23xf32>) {
    ^bb0(%a0: f32, %a1: f32, %o: f32):
      %s = arith.mulf %a0, %a1 : f32
      linalg.yield %s : f32
    } -> tensor<2x23xf32> loc("graph.node14":14:0)
    %w94 = util.global.load @p_model_layers_0_mlp_down_proj_weight : tensor<48x23xf32> loc("graph.node15":15:0)
    %e95 = tensor.empty() : tensor<2x48xf32> loc("graph.node15":15:0)
    %f96 = linalg.fill ins(%zero : f32) outs(%e95 : tensor<2x48xf32>) -> tensor<2x48xf32> loc("graph.node15":15:0)
    %g97 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%g93, %w94 : tensor<2x23xf32>, tensor<48x23xf32>) outs(%f96 : tensor<2x48xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x48xf32> loc("graph.node15":15:0)
    %e98 = tensor.empty() : tensor<2x48xf32> loc("graph.node16":16:0)
    %g99 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g73, %g97 : tensor<2x48xf32>, tensor<2x48xf32>) outs(%e98 : tensor<2x48xf32>) {
    ^bb0(%a0: f32, %a1: f32, %o: f32):
      %s = arith.addf %a0, %a1 : f32
      linalg.yield %s : f32
    } -> tensor<2x48xf32> loc("graph.node16":16:0)
    %r100 = tensor.expand_shape %g99 [[0], [1, 2]] output_shape [2, 1, 48] : tensor<2x48xf32> into tensor<2x1x48xf32> loc("graph.node17":17:0)
    %e101 = tensor.empty() : tensor<2x1xf32> loc("graph.node17":17:0)
    %f102 = linalg.fill ins(%zero : f32) outs(%e101 : tensor<2x1xf32>) -> tensor<2x1xf32> loc("graph.node17":17:0)
    %g103 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r100 : tensor<2x1x48xf32>) outs(%f102 : tensor<2x1xf32>) {
    ^bb0(%a: f32, %s: f32):
      %q = arith.mulf %a, %a : f32
      %r = arith.addf %s, %q : f32
      linalg.yield %r : f32
    } -> tensor<2x1xf32> loc("graph.node17":17:0)
    %w104 = util.global.load @p_model_norm_weight : tensor<48xf32> loc("graph.node17":17:0)
    %e105 = tensor.empty() : tensor<2x1x48xf32> loc("graph.node17":17:0)
    %g106 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r100, %g103, %w104 : tensor<2x1x48xf32>, tensor<2x1xf32>, tensor<48xf32>) outs(%e105 : tensor<2x1x48xf32>) {
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
    %r107 = tensor.collapse_shape %g106 [[0], [1, 2]] : tensor<2x1x48xf32> into tensor<2x48xf32> loc("graph.node17":17:0)
    %w108 = util.global.load @p_lm_head_weight : tensor<259x48xf32> loc("graph.node18":18:0)
    %e109 = tensor.empty() : tensor<2x259xf32> loc("graph.node18":18:0)
    %f110 = linalg.fill ins(%zero : f32) outs(%e109 : tensor<2x259xf32>) -> tensor<2x259xf32> loc("graph.node18":18:0)
    %g111 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r107, %w108 : tensor<2x48xf32>, tensor<259x48xf32>) outs(%f110 : tensor<2x259xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x259xf32> loc("graph.node18":18:0)
    return %cache53, %g111 : tensor<1x2x2x?x2x12xf32>, tensor<2x259xf32>
  }
}
