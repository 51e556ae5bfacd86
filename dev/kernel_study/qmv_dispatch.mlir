  // LSE custom dispatch: GGUF-block decode matvec, C microkernels in build/lse_qmv.o (gcc, AVX2/FMA/F16C).
  //   flow.dispatch @lse_qmv::@q4_1_matvec[%nwg](%x, %w, %R, %N, %K, %tile)
  //     : (tensor<RxKxf32>, tensor<Nx(K/32*20)xi8>, index, index, index, index) -> tensor<RxNxf32>
  // Workgroup i computes output rows [i*tile, min(N, (i+1)*tile)) for all R rows; nwg = ceil(N / tile).
  stream.executable private @lse_qmv attributes {
    hal.executable.objects = #hal.executable.objects<{
      #hal.executable.target<"llvm-cpu", "embedded-elf-x86_64"> = [
        #hal.executable.object<{path = "lse_qmv.o"}>
      ]
    }>
  } {
    stream.executable.export public @q4_1_matvec workgroups(%nwg: index) -> (index, index, index) {
      %c1 = arith.constant 1 : index
      stream.return %nwg, %c1, %c1 : index, index, index
    }
    stream.executable.export public @q8_0_matvec workgroups(%nwg: index) -> (index, index, index) {
      %c1 = arith.constant 1 : index
      stream.return %nwg, %c1, %c1 : index, index, index
    }
    builtin.module {
      func.func private @lse_q4_1_matvec(memref<f32>, index, memref<i8>, index, memref<f32>, index,
                                         index, index, index, index, index)
          attributes {hal.import.static, llvm.bareptr = true}
      func.func private @lse_q8_0_matvec(memref<f32>, index, memref<i8>, index, memref<f32>, index,
                                         index, index, index, index, index)
          attributes {hal.import.static, llvm.bareptr = true}
      func.func @q4_1_matvec(%xb: !stream.binding, %wb: !stream.binding, %yb: !stream.binding,
                             %r: index, %n: index, %k: index, %tile: index) {
        %c0 = arith.constant 0 : index
        %c20 = arith.constant 20 : index
        %c32 = arith.constant 32 : index
        %wg = stream.dispatch.workgroup.id[0] : index
        %xn = arith.muli %r, %k : index
        %yn = arith.muli %r, %n : index
        %nb = arith.divui %k, %c32 : index
        %wr = arith.muli %nb, %c20 : index
        %wn = arith.muli %n, %wr : index
        %xm = stream.binding.subspan %xb[%c0] : !stream.binding -> memref<?xf32>{%xn}
        %wm = stream.binding.subspan %wb[%c0] : !stream.binding -> memref<?xi8>{%wn}
        %ym = stream.binding.subspan %yb[%c0] : !stream.binding -> memref<?xf32>{%yn}
        %xbase, %xoff, %xs, %xst = iree_codegen.extract_strided_metadata %xm : memref<?xf32> -> memref<f32>, index, index, index
        %wbase, %woff, %ws, %wst = iree_codegen.extract_strided_metadata %wm : memref<?xi8> -> memref<i8>, index, index, index
        %ybase, %yoff, %ys, %yst = iree_codegen.extract_strided_metadata %ym : memref<?xf32> -> memref<f32>, index, index, index
        func.call @lse_q4_1_matvec(%xbase, %xoff, %wbase, %woff, %ybase, %yoff, %r, %n, %k, %tile, %wg)
            : (memref<f32>, index, memref<i8>, index, memref<f32>, index, index, index, index, index, index) -> ()
        return
      }
      func.func @q8_0_matvec(%xb: !stream.binding, %wb: !stream.binding, %yb: !stream.binding,
                             %r: index, %n: index, %k: index, %tile: index) {
        %c0 = arith.constant 0 : index
        %c34 = arith.constant 34 : index
        %c32 = arith.constant 32 : index
        %wg = stream.dispatch.workgroup.id[0] : index
        %xn = arith.muli %r, %k : index
        %yn = arith.muli %r, %n : index
        %nb = arith.divui %k, %c32 : index
        %wr = arith.muli %nb, %c34 : index
        %wn = arith.muli %n, %wr : index
        %xm = stream.binding.subspan %xb[%c0] : !stream.binding -> memref<?xf32>{%xn}
        %wm = stream.binding.subspan %wb[%c0] : !stream.binding -> memref<?xi8>{%wn}
        %ym = stream.binding.subspan %yb[%c0] : !stream.binding -> memref<?xf32>{%yn}
        %xbase, %xoff, %xs, %xst = iree_codegen.extract_strided_metadata %xm : memref<?xf32> -> memref<f32>, index, index, index
        %wbase, %woff, %ws, %wst = iree_codegen.extract_strided_metadata %wm : memref<?xi8> -> memref<i8>, index, index, index
        %ybase, %yoff, %ys, %yst = iree_codegen.extract_strided_metadata %ym : memref<?xf32> -> memref<f32>, index, index, index
        func.call @lse_q8_0_matvec(%xbase, %xoff, %wbase, %woff, %ybase, %yoff, %r, %n, %k, %tile, %wg)
            : (memref<f32>, index, memref<i8>, index, memref<f32>, index, index, index, index, index, index) -> ()
        return
      }
    }
  }
