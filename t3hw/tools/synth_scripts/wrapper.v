// t3hw synth timing wrapper (wrapper.v, filled in by t3hw/tools/synth): a register on
// every input and every output of $module, so that place and route measures the block's own
// paths register to register, with three pins whatever the block's port count.
//
// Inputs: a serial-in shift register drives every input bit of the block (rst included), so
// each input is a flip-flop whose value Yosys cannot know and no logic is constant-folded.
// Outputs: every output bit is registered (out_r), then folded into a shift/XOR chain
// (out_sr[i] <= out_r[i] ^ out_sr[i-1]) that ends on the `so` pin. Each output bit reaches
// `so` after its own number of cycles, so no output is unobserved and no two outputs cancel:
// Yosys can strip nothing. Every wrapper path is one flip-flop to one flip-flop, at most
// through one 2-input XOR.
module t3hw_synth_wrapper(clk, si, so);
  input clk;
  input si;
  output so;

  reg [$in_msb:0] in_sr;
  always @(posedge clk) in_sr <= $in_next;

  wire [$out_msb:0] out;
  reg [$out_msb:0] out_r;
  reg [$out_msb:0] out_sr;
  always @(posedge clk) begin
    out_r <= out;
    out_sr <= $out_next;
  end
  assign so = out_sr[$out_msb];

  $module $dut (
$connections
  );
endmodule
