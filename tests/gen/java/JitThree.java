// JitThree.java — JVM workload with known truth for the eBPF sampler's JIT
// perf-map names (tests/integration/test_ebpf_jit.py): hotAlpha, hotBeta
// and hotGamma spin for 50 / 30 / 20 % of the CPU in short interleaved
// slices on the main thread, each slice measured with the thread's own CPU
// clock (ThreadMXBean). Run with -XX:CompileCommand=dontinline,JitThree::*
// so each method keeps its own compiled code; the test writes the perf map
// with `jcmd PID Compiler.perfmap` while it runs.
// Usage: java JitThree SECONDS; after a 2 s warm-up with the same split,
// prints one JSON line {"pid":…, "cpu_ns":{"hotAlpha":…, "hotBeta":…,
// "hotGamma":…}, "warm_ns":{… the warm-up's}}.
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class JitThree {
	static volatile long sink;

	// three copies of the loop, not calls of one helper: each must be hot itself
	static long hotAlpha(long n) {
		long x = 1;
		for (long i = 0; i < n; i++)
			x = (x * 31 + (i ^ x)) % 1000003;
		return x;
	}

	static long hotBeta(long n) {
		long x = 3;
		for (long i = 0; i < n; i++)
			x = (x * 31 + (i ^ x)) % 1000003;
		return x;
	}

	static long hotGamma(long n) {
		long x = 5;
		for (long i = 0; i < n; i++)
			x = (x * 31 + (i ^ x)) % 1000003;
		return x;
	}

	static long call(int which, long n) {
		switch (which) {
		case 0: return hotAlpha(n);
		case 1: return hotBeta(n);
		default: return hotGamma(n);
		}
	}

	static final double[] SHARE = {0.5, 0.3, 0.2};

	/* interleaved slices of 10 ms, each method its share, for seconds of
	 * wall time; each slice's thread CPU time added to ns */
	static void slices(ThreadMXBean tm, double seconds, double perMs, long[] ns) {
		double sliceMs = 10;
		long end = System.nanoTime() + (long) (seconds * 1e9);
		while (System.nanoTime() < end) {
			for (int w = 0; w < 3; w++) {
				long n = Math.max(1, Math.round(perMs * sliceMs * SHARE[w]));
				long a = tm.getCurrentThreadCpuTime();
				sink ^= call(w, n);
				ns[w] += tm.getCurrentThreadCpuTime() - a;
			}
		}
	}

	public static void main(String[] args) {
		double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 3;
		ThreadMXBean tm = ManagementFactory.getThreadMXBean();
		long[] warm = new long[3], ns = new long[3];
		// warm-up, 2 s with the same split (measured apart): the methods
		// reach their optimized code (C2) and the test writes the first
		// perf map before the measured part begins; then calibrate again
		slices(tm, 2, 20_000, warm);
		long c0 = tm.getCurrentThreadCpuTime();
		sink ^= call(0, 5_000_000);
		double perMs = 5_000_000 / Math.max((tm.getCurrentThreadCpuTime() - c0) / 1e6, 0.01);
		slices(tm, seconds, perMs, ns);
		System.out.println("{\"pid\":" + ProcessHandle.current().pid() +
				   ",\"cpu_ns\":{\"hotAlpha\":" + ns[0] + ",\"hotBeta\":" + ns[1] + ",\"hotGamma\":" + ns[2] +
				   "},\"warm_ns\":{\"hotAlpha\":" + warm[0] + ",\"hotBeta\":" + warm[1] + ",\"hotGamma\":" + warm[2] +
				   "}}");
	}
}
