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
    %r16 = tensor.expand_shape %g15 [[0], [1, 2]] output_shape [2, 4, 12] : tensor<2x48xf32> into tensor<2x4x12xf32> loc("graph.node3":3:0)
    %e17 = tensor.empty() : tensor<2x4x12xf32> loc("graph.node3":3:0)
    %g18 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<2xi64>) outs(%e17 : tensor<2x4x12xf32>) {
    ^bb0(%p: i64, %o: f32):
      %i = linalg.index 0 : index
      %h = linalg.index 1 : index
      %j = linalg.index 2 : index
      %half = arith.constant 6 : index
      %k = arith.remui %j, %half : index
      %lo = arith.cmpi ult, %j, %half : index
      %jh = arith.addi %j, %half : index
      %jl = arith.subi %j, %half : index
      %jp = arith.select %lo, %jh, %jl : index
      %xv = tensor.extract %r16[%i, %h, %j] : tensor<2x4x12xf32>
      %xp = tensor.extract %r16[%i, %h, %jp] : tensor<2x4x12xf32>
      %ng = arith.negf %xp : f32
      %rot = arith.select %lo, %ng, %xp : f32
      %ki = arith.index_cast %k : index to i64
      %kf = arith.sitofp %ki : i64 to f32
      %base = arith.constant 1.000000000e+04 : f32
      %sc = arith.constant -1.666666667e-01 : f32
      %ex = arith.mulf %kf, %sc : f32
      %fr = math.powf %base, %ex : f32
      %pf = arith.sitofp %p : i64 to f32
      %ang = arith.mulf %pf, %fr : f32
      %cs = math.cos %ang : f32
      %sn = math.sin %ang : f32
      %a = arith.mulf %xv, %cs : f32
      %b = arith.mulf %rot, %sn : f32
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<2x4x12xf32> loc("graph.node3":3:0)
    %r19 = tensor.collapse_shape %g18 [[0], [1, 2]] : tensor<2x4x12xf32> into tensor<2x48xf32> loc("graph.node3":3:0)
    %w20 = util.global.load @p_model_layers_0_self_attn_k_proj_weight : tensor<24x48xf32> loc("graph.node4":4:0)
    %e21 = tensor.empty() : tensor<2x24xf32> loc("graph.node4":4:0)
    %f22 = linalg.fill ins(%zero : f32) outs(%e21 : tensor<2x24xf32>) -> tensor<2x24xf32> loc("graph.node4":4:0)
    %g23 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r11, %w20 : tensor<2x48xf32>, tensor<24x48xf32>) outs(%f22 : tensor<2x24xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x24xf32> loc("graph.node4":4:0)
    %r24 = tensor.expand_shape %g23 [[0], [1, 2]] output_shape [2, 2, 12] : tensor<2x24xf32> into tensor<2x2x12xf32> loc("graph.node5":5:0)
    %e25 = tensor.empty() : tensor<2x2x12xf32> loc("graph.node5":5:0)
    %g26 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<2xi64>) outs(%e25 : tensor<2x2x12xf32>) {
    ^bb0(%p: i64, %o: f32):
      %i = linalg.index 0 : index
      %h = linalg.index 1 : index
      %j = linalg.index 2 : index
      %half = arith.constant 6 : index
      %k = arith.remui %j, %half : index
      %lo = arith.cmpi ult, %j, %half : index
      %jh = arith.addi %j, %half : index
      %jl = arith.subi %j, %half : index
      %jp = arith.select %lo, %jh, %jl : index
      %xv = tensor.extract %r24[%i, %h, %j] : tensor<2x2x12xf32>
      %xp = tensor.extract %r24[%i, %h, %jp] : tensor<2x2x12xf32>
      %ng = arith.negf %xp : f32
      %rot = arith.select %lo, %ng, %xp : f32
      %ki = arith.index_cast %k : index to i64
      %kf = arith.sitofp %ki : i64 to f32
      %base = arith.constant 1.000000000e+04 : f32
      %sc = arith.constant -1.666666667e-01 : f32
      %ex = arith.mulf %kf, %sc : f32
      %fr = math.powf %base, %ex : f32
      %pf = arith.sitofp %p : i64 to f32
      %ang = arith.mulf %pf, %fr : f32
      %cs = math.cos %ang : f32
      %sn = math.sin %ang : f32
      %a = arith.mulf %xv, %cs : f32
      %b = arith.mulf %rot, %sn : f32
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
    } -> tensor<2x2x12xf32> loc("graph.node5":5:0)
    %r27 = tensor.collapse_shape %g26 [[0], [1, 2]] : tensor<2x2x12xf32> into tensor<2x24xf32> loc("graph.node5":5:0)
    %w28 = util.global.load @p_model_layers_0_self_attn_v_proj_weight : tensor<24x48xf32> loc("graph.node6":6:0)
    %e29 = tensor.empty() : tensor<2x24xf32> loc("graph.node6":6:0)
    %f30 = linalg.fill ins(%zero : f32) outs(%e29 : tensor<2x24xf32>) -> tensor<2x24xf32> loc("graph.node6":6:0)
    %g31 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r11, %w28 : tensor<2x48xf32>, tensor<24x48xf32>) outs(%f30 : tensor<2x24xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x24xf32> loc("graph.node6":6:0)
    %r32 = tensor.expand_shape %r27 [[0], [1, 2]] output_shape [2, 2, 12] : tensor<2x24xf32> into tensor<2x2x12xf32> loc("graph.node7":7:0)
    %r33 = tensor.expand_shape %g31 [[0], [1, 2]] output_shape [2, 2, 12] : tensor<2x24xf32> into tensor<2x2x12xf32> loc("graph.node7":7:0)
    %el34 = tensor.extract %arg1[%c0_ix] : tensor<2xi64> loc("graph.node7":7:0)
    %ix35 = arith.index_cast %el34 : i64 to index loc("graph.node7":7:0)
    %row36 = tensor.extract_slice %r32[0, 0, 0] [1, 2, 12] [1, 1, 1] : tensor<2x2x12xf32> to tensor<2x12xf32> loc("graph.node7":7:0)
    %cache37 = tensor.insert_slice %row36 into %cache[0, 0, 0, %ix35, 0, 0] [1, 1, 1, 1, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<2x12xf32> into tensor<1x2x2x?x2x12xf32> loc("graph.node7":7:0)
    %row38 = tensor.extract_slice %r33[0, 0, 0] [1, 2, 12] [1, 1, 1] : tensor<2x2x12xf32> to tensor<2x12xf32> loc("graph.node7":7:0)
    %cache39 = tensor.insert_slice %row38 into %cache37[0, 1, 0, %ix35, 0, 0] [1, 1, 1, 1, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<2x12xf32> into tensor<1x2x2x?x2x12xf32> loc("graph.node7":7:0)
    %el40 = tensor.extract %arg1[%c1_ix] : tensor<2xi64> loc("graph.node7":7:0)
    %ix41 = arith.index_cast %el40 : i64 to index loc("graph.node7":7:0)
    %row42 = tensor.extract_slice %r32[1, 0, 0] [1, 2, 12] [1, 1, 1] : tensor<2x2x12xf32> to tensor<2x12xf32> loc("graph.node7":7:0)
    %cache43 = tensor.insert_slice %row42 into %cache39[0, 0, 1, %ix41, 0, 0] [1, 1, 1, 1, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<2x12xf32> into tensor<1x2x2x?x2x12xf32> loc("graph.node7":7:0)
    %row44 = tensor.extract_slice %r33[1, 0, 0] [1, 2, 12] [1, 1, 1] : tensor<2x2x12xf32> to tensor<2x12xf32> loc("graph.node7":7:0)
    %cache45 = tensor.insert_slice %row44 into %cache43[0, 1, 1, %ix41, 0, 0] [1, 1, 1, 1, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<2x12xf32> into tensor<1x2x2x?x2x12xf32> loc("graph.node7":7:0)
    %kvw46 = tensor.extract_slice %cache45[0, 0, 0, 0, 0, 0] [1, 1, 2, %window_ix, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<1x2x2x?x2x12xf32> to tensor<2x?x2x12xf32> loc("graph.node7":7:0)
    %kvw47 = tensor.extract_slice %cache45[0, 1, 0, 0, 0, 0] [1, 1, 2, %window_ix, 2, 12] [1, 1, 1, 1, 1, 1] : tensor<1x2x2x?x2x12xf32> to tensor<2x?x2x12xf32> loc("graph.node7":7:0)
    %r48 = tensor.expand_shape %r19 [[0], [1, 2, 3]] output_shape [2, 2, 2, 12] : tensor<2x48xf32> into tensor<2x2x2x12xf32> loc("graph.node7":7:0)
    %e49 = tensor.empty(%window_ix) : tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %f50 = linalg.fill ins(%zero : f32) outs(%e49 : tensor<2x2x2x?xf32>) -> tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %g51 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%r48, %kvw46 : tensor<2x2x2x12xf32>, tensor<2x?x2x12xf32>) outs(%f50 : tensor<2x2x2x?xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %e52 = tensor.empty(%window_ix) : tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %g53 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%g51, %arg1 : tensor<2x2x2x?xf32>, tensor<2xi64>) outs(%e52 : tensor<2x2x2x?xf32>) {
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
    %e54 = tensor.empty(%window_ix) : tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %probs55 = linalg.softmax dimension(3) ins(%g53 : tensor<2x2x2x?xf32>) outs(%e54 : tensor<2x2x2x?xf32>) -> tensor<2x2x2x?xf32> loc("graph.node7":7:0)
    %e56 = tensor.empty() : tensor<2x2x2x12xf32> loc("graph.node7":7:0)
    %f57 = linalg.fill ins(%zero : f32) outs(%e56 : tensor<2x2x2x12xf32>) -> tensor<2x2x2x12xf32> loc("graph.node7":7:0)
    %g58 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%probs55, %kvw47 : tensor<2x2x2x?xf32>, tensor<2x?x2x12xf32>) outs(%f57 : tensor<2x2x2x12xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x2x2x12xf32> loc("graph.node7":7:0)
    %r59 = tensor.collapse_shape %g58 [[0], [1, 2, 3]] : tensor<2x2x2x12xf32> into tensor<2x48xf32> loc("graph.node7":7:0)
    %w60 = util.global.load @p_model_layers_0_self_attn_o_proj_weight : tensor<48x48xf32> loc("graph.node8":8:0)
    %e61 = tensor.empty() : tensor<2x48xf32> loc("graph.node8":8:0)
    %f62 = linalg.fill ins(%zero : f32) outs(%e61 : tensor<2x48xf32>) -> tensor<2x48xf32> loc("graph.node8":8:0)
    %g63 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r59, %w60 : tensor<2x48xf32>, tensor<48x48xf32>) outs(%f62 : tensor<2x48xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x48xf32> loc("graph.node8":8:0)
    %e64 = tensor.empty() : tensor<2x48xf32> loc("graph.node9":9:0)
    %g65 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g3, %g63 : tensor<2x48xf32>, tensor<2x48xf32>) outs(%e64 : tensor<2x48xf32>) {
    ^bb0(%a0: f32, %a1: f32, %o: f32):
      %s = arith.addf %a0, %a1 : f32
      linalg.yield %s : f32
    } -> tensor<2x48xf32> loc("graph.node9":9:0)
    %r66 = tensor.expand_shape %g65 [[0], [1, 2]] output_shape [2, 1, 48] : tensor<2x48xf32> into tensor<2x1x48xf32> loc("graph.node10":10:0)
    %e67 = tensor.empty() : tensor<2x1xf32> loc("graph.node10":10:0)
    %f68 = linalg.fill ins(%zero : f32) outs(%e67 : tensor<2x1xf32>) -> tensor<2x1xf32> loc("graph.node10":10:0)
    %g69 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r66 : tensor<2x1x48xf32>) outs(%f68 : tensor<2x1xf32>) {
    ^bb0(%a: f32, %s: f32):
      %q = arith.mulf %a, %a : f32
      %r = arith.addf %s, %q : f32
      linalg.yield %r : f32
    } -> tensor<2x1xf32> loc("graph.node10":10:0)
    %w70 = util.global.load @p_model_layers_0_post_attention_layernorm_weight : tensor<48xf32> loc("graph.node10":10:0)
    %e71 = tensor.empty() : tensor<2x1x48xf32> loc("graph.node10":10:0)
    %g72 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r66, %g69, %w70 : tensor<2x1x48xf32>, tensor<2x1xf32>, tensor<48xf32>) outs(%e71 : tensor<2x1x48xf32>) {
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
    %r73 = tensor.collapse_shape %g72 [[0], [1, 2]] : tensor<2x1x48xf32> into tensor<2x48xf32> loc("graph.node10":10:0)
    %w74 = util.global.load @p_model_layers_0_mlp_gate_proj_weight : tensor<23x48xf32> loc("graph.node11":11:0)
    %e75 = tensor.empty() : tensor<2x23xf32> loc("graph.node11":11:0)
    %f76 = linalg.fill ins(%zero : f32) outs(%e75 : tensor<2x23xf32>) -> tensor<2x23xf32> loc("graph.node11":11:0)
    %g77 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r73, %w74 : tensor<2x48xf32>, tensor<23x48xf32>) outs(%f76 : tensor<2x23xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x23xf32> loc("graph.node11":11:0)
    %w78 = util.global.load @p_model_layers_0_mlp_up_proj_weight : tensor<23x48xf32> loc("graph.node12":12:0)
    %e79 = tensor.empty() : tensor<2x23xf32> loc("graph.node12":12:0)
    %f80 = linalg.fill ins(%zero : f32) outs(%e79 : tensor<2x23xf32>) -> tensor<2x23xf32> loc("graph.node12":12:0)
    %g81 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r73, %w78 : tensor<2x48xf32>, tensor<23x48xf32>) outs(%f80 : tensor<2x23xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x23xf32> loc("graph.node12":12:0)
    %e82 = tensor.empty() : tensor<2x23xf32> loc("graph.node13":13:0)
    %g83 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g77 : tensor<2x23xf32>) outs(%e82 : tensor<2x23xf32>) {
    ^bb0(%a0: f32, %o: f32):
      %one = arith.constant 1.0 : f32
      %ng = arith.negf %a0 : f32
      %ex = math.exp %ng : f32
      %den = arith.addf %one, %ex : f32
      %s = arith.divf %a0, %den : f32
      linalg.yield %s : f32
    } -> tensor<2x23xf32> loc("graph.node13":13:0)
    %e84 = tensor.empty() : tensor<2x23xf32> loc("graph.node14":14:0)
    %g85 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g83, %g81 : tensor<2x23xf32>, tensor<2x23xf32>) outs(%e84 : tensor<2x23xf32>) {
    ^bb0(%a0: f32, %a1: f32, %o: f32):
      %s = arith.mulf %a0, %a1 : f32
      linalg.yield %s : f32
    } -> tensor<2x23xf32> loc("graph.node14":14:0)
    %w86 = util.global.load @p_model_layers_0_mlp_down_proj_weight : tensor<48x23xf32> loc("graph.node15":15:0)
    %e87 = tensor.empty() : tensor<2x48xf32> loc("graph.node15":15:0)
    %f88 = linalg.fill ins(%zero : f32) outs(%e87 : tensor<2x48xf32>) -> tensor<2x48xf32> loc("graph.node15":15:0)
    %g89 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%g85, %w86 : tensor<2x23xf32>, tensor<48x23xf32>) outs(%f88 : tensor<2x48xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x48xf32> loc("graph.node15":15:0)
    %e90 = tensor.empty() : tensor<2x48xf32> loc("graph.node16":16:0)
    %g91 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%g65, %g89 : tensor<2x48xf32>, tensor<2x48xf32>) outs(%e90 : tensor<2x48xf32>) {
    ^bb0(%a0: f32, %a1: f32, %o: f32):
      %s = arith.addf %a0, %a1 : f32
      linalg.yield %s : f32
    } -> tensor<2x48xf32> loc("graph.node16":16:0)
    %r92 = tensor.expand_shape %g91 [[0], [1, 2]] output_shape [2, 1, 48] : tensor<2x48xf32> into tensor<2x1x48xf32> loc("graph.node17":17:0)
    %e93 = tensor.empty() : tensor<2x1xf32> loc("graph.node17":17:0)
    %f94 = linalg.fill ins(%zero : f32) outs(%e93 : tensor<2x1xf32>) -> tensor<2x1xf32> loc("graph.node17":17:0)
    %g95 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r92 : tensor<2x1x48xf32>) outs(%f94 : tensor<2x1xf32>) {
    ^bb0(%a: f32, %s: f32):
      %q = arith.mulf %a, %a : f32
      %r = arith.addf %s, %q : f32
      linalg.yield %r : f32
    } -> tensor<2x1xf32> loc("graph.node17":17:0)
    %w96 = util.global.load @p_model_norm_weight : tensor<48xf32> loc("graph.node17":17:0)
    %e97 = tensor.empty() : tensor<2x1x48xf32> loc("graph.node17":17:0)
    %g98 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%r92, %g95, %w96 : tensor<2x1x48xf32>, tensor<2x1xf32>, tensor<48xf32>) outs(%e97 : tensor<2x1x48xf32>) {
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
    %r99 = tensor.collapse_shape %g98 [[0], [1, 2]] : tensor<2x1x48xf32> into tensor<2x48xf32> loc("graph.node17":17:0)
    %w100 = util.global.load @p_lm_head_weight : tensor<259x48xf32> loc("graph.node18":18:0)
    %e101 = tensor.empty() : tensor<2x259xf32> loc("graph.node18":18:0)
    %f102 = linalg.fill ins(%zero : f32) outs(%e101 : tensor<2x259xf32>) -> tensor<2x259xf32> loc("graph.node18":18:0)
    %g103 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r99, %w100 : tensor<2x48xf32>, tensor<259x48xf32>) outs(%f102 : tensor<2x259xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x259xf32> loc("graph.node18":18:0)
    return %cache45, %g103 : tensor<1x2x2x?x2x12xf32>, tensor<2x259xf32>
  }
}
