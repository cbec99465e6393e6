import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * A JVM started ahead of its run (java.toml's [ahead]): it reads the program's main class
 * name as the first line of its stdin, then runs that class as `java -cp out Main` would,
 * the rest of its stdin the program's. The class is loaded and checked as the launcher does
 * (sun.launcher.LauncherHelper: its messages, its exit status; the JDK's own code is not
 * called, as that needs --add-exports, which costs the JVM 20 ms of its start), its
 * initializer's failure reported as the launcher reports it, and this class's frames (its
 * own, the reflective call's) taken off the stack traces of what the program throws: an
 * uncaught exception prints as it prints under `java`. The call is reflective, not a method
 * handle, whose forms cost the JVM 8 ms of CPU a run; and this class is not on the boot class
 * path, where @Hidden would hide its frames from every stack trace, as that costs the JVM
 * 15 to 20 ms of its start (-Xbootclasspath/a turns off the class-data-sharing archive's
 * module graph).
 */
public final class ToolserverJavaStart {
    private static final String CLASS_PATH = "out";  // what `java -cp out` reports as its class path

    public static void main(String[] args) throws Throwable {
        String name = firstLine();
        if (name == null) {
            System.exit(1);
        }
        System.setProperty("sun.java.command", name);
        System.setProperty("java.class.path", CLASS_PATH);
        Class<?> main = loadMain(name);
        Method method = mainMethod(main);
        try {
            Class.forName(main.getName(), true, main.getClassLoader());
        } catch (ExceptionInInitializerError error) {
            throw asTheLauncherReportsIt(error, main);
        }
        method.setAccessible(true);  // a class that is not public runs under `java` too
        try {
            method.invoke(null, (Object) new String[0]);
        } catch (InvocationTargetException invoked) {
            Throwable thrown = invoked.getCause();
            withoutTheseFrames(thrown, Collections.newSetFromMap(new IdentityHashMap<>()));
            throw thrown;
        }
    }

    /** Takes the frames of this class and of the reflective call into the program off the
     *  end of the stack traces of thrown, its causes and what it suppressed: where `java`
     *  runs the program, its main's frame is the last. */
    private static void withoutTheseFrames(Throwable thrown, Set<Throwable> seen) {
        if (thrown == null || !seen.add(thrown)) {
            return;
        }
        StackTraceElement[] frames = thrown.getStackTrace();
        int end = frames.length;
        while (end > 0 && isOurs(frames[end - 1].getClassName())) {
            end--;
        }
        if (end < frames.length) {
            thrown.setStackTrace(Arrays.copyOf(frames, end));
        }
        withoutTheseFrames(thrown.getCause(), seen);
        for (Throwable suppressed : thrown.getSuppressed()) {
            withoutTheseFrames(suppressed, seen);
        }
    }

    private static boolean isOurs(String className) {
        return className.equals(ToolserverJavaStart.class.getName()) || className.equals(Method.class.getName())
            || className.startsWith("jdk.internal.reflect.");
    }

    /** The class as LauncherHelper.loadMainClass loads it, or its message and exit. */
    private static Class<?> loadMain(String name) {
        String className = name.replace('/', '.');
        try {
            return Class.forName(className, false, ClassLoader.getSystemClassLoader());
        } catch (NoClassDefFoundError | ClassNotFoundException missing) {
            throw abort("Error: Could not find or load main class " + className + "\nCaused by: "
                        + missing.getClass().getCanonicalName() + ": " + missing.getMessage());
        } catch (LinkageError error) {
            throw abort("Error: LinkageError occurred while loading main class " + className + "\n\t"
                        + error.getClass().getName() + ": " + error.getLocalizedMessage());
        }
    }

    /** Its main method as LauncherHelper.validateMainClass checks it, or its message and exit. */
    private static Method mainMethod(Class<?> main) {
        Method method;
        try {
            method = main.getMethod("main", String[].class);
        } catch (NoSuchMethodException missing) {
            throw abort("Error: Main method not found in class " + main.getName() + ", please define the main method as:"
                        + "\n   public static void main(String[] args)"
                        + "\nor a JavaFX application class must extend javafx.application.Application");
        } catch (Throwable error) {
            throw abort("Error: Unable to initialize main class " + main.getName() + "\nCaused by: "
                        + error.getClass().getName() + ": " + error.getLocalizedMessage());
        }
        if (!Modifier.isStatic(method.getModifiers())) {
            throw abort("Error: Main method is not static in class " + method.getDeclaringClass().getName()
                        + ", please define the main method as:\n   public static void main(String[] args)");
        }
        if (method.getReturnType() != void.class) {
            throw abort("Error: Main method must return a value of type void in class "
                        + method.getDeclaringClass().getName() + ", please \ndefine the main method as:"
                        + "\n   public static void main(String[] args)");
        }
        return method;
    }

    /** The launcher's end for a main class it cannot run: its message, exit status 1. */
    private static Error abort(String message) {
        System.err.println(message);
        System.exit(1);
        return new AssertionError(message);
    }

    /** A failed initializer as `java` reports it: the error without frames of its own (the
     *  launcher's JNI call raised it), its cause's frames ending at the initializer. */
    private static Throwable asTheLauncherReportsIt(ExceptionInInitializerError error, Class<?> main) {
        error.setStackTrace(new StackTraceElement[0]);
        Throwable cause = error.getCause();
        if (cause != null) {
            StackTraceElement[] frames = cause.getStackTrace();
            int end = frames.length;
            while (end > 0 && !(frames[end - 1].getMethodName().equals("<clinit>")
                    && frames[end - 1].getClassName().equals(main.getName()))) {
                end--;
            }
            if (end > 0) {
                cause.setStackTrace(Arrays.copyOf(frames, end));
            }
        }
        return error;
    }

    /** The first line of fd 0, read a byte at a time so that System.in, not yet read,
     *  starts right after it; null at end of file. The stream is not closed: fd 0 is the
     *  program's. */
    private static String firstLine() throws IOException {
        FileInputStream in = new FileInputStream(FileDescriptor.in);
        StringBuilder line = new StringBuilder();
        for (int c = in.read(); c != '\n'; c = in.read()) {
            if (c < 0) {
                return null;
            }
            line.append((char) c);
        }
        return line.toString();
    }
}
