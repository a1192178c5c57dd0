// JfrWork.java — a small JVM workload for JFR parser tests (tests/gen/gen-jfr).
// Three CPU threads spend their time in methods with distinct names, one
// thread allocates, and two threads contend on a monitor and park, so a
// settings=profile recording holds ExecutionSample, ObjectAllocationSample,
// JavaMonitorEnter, ThreadPark and GC events. Usage: java JfrWork SECONDS
import java.util.Arrays;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

public class JfrWork {
	static volatile long sink;
	static volatile boolean stop;
	static final Object lock = new Object();

	static long burnAlpha(long n) {
		double x = 1.0;
		for (long i = 0; i < n; i++)
			x = Math.sqrt(x + i) * 1.0000001;
		return (long) x;
	}

	static long burnBeta(int n) {
		long h = 0;
		for (int i = 0; i < n; i++)
			h = h * 31 + Long.toHexString(i * 2654435761L).hashCode();
		return h;
	}

	static long burnGamma(int n) {
		int[] a = new int[n];
		long s = 0;
		for (int r = 0; r < 20; r++) {
			for (int i = 0; i < n; i++)
				a[i] = (int) ((i * 1103515245L + r) & 0x7fffffff);
			Arrays.sort(a);
			s += a[n / 2];
		}
		return s;
	}

	static long allocateLots(int n) {
		List<byte[]> keep = new ArrayList<>();
		long total = 0;
		for (int i = 0; i < n; i++) {
			byte[] b = new byte[1024 + (i % 64) * 512];
			total += b.length;
			if (keep.size() < 256)
				keep.add(b);
			else
				keep.set(i % 256, b);
		}
		return total + keep.size();
	}

	static void holdLock() {
		synchronized (lock) {
			LockSupport.parkNanos(30_000_000L);
		}
	}

	static Thread start(String name, Runnable r) {
		Thread t = new Thread(() -> {
			while (!stop)
				r.run();
		}, name);
		t.start();
		return t;
	}

	public static void main(String[] args) throws Exception {
		double secs = args.length > 0 ? Double.parseDouble(args[0]) : 3;
		List<Thread> ts = new ArrayList<>();
		ts.add(start("burn-alpha", () -> sink += burnAlpha(2_000_000)));
		ts.add(start("burn-beta", () -> sink += burnBeta(200_000)));
		ts.add(start("burn-gamma", () -> sink += burnGamma(50_000)));
		ts.add(start("allocator", () -> sink += allocateLots(20_000)));
		ts.add(start("locker-1", JfrWork::holdLock));
		ts.add(start("locker-2", JfrWork::holdLock));
		Thread.sleep((long) (secs * 1000));
		stop = true;
		for (Thread t : ts)
			t.join();
		System.out.println("sink " + sink);
	}
}
