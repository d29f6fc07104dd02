package io.sparkprov.plugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkprov.plugin.query.Traces;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The jar holds neither the classes generated from proto/ nor protobuf-java (the pom), and Neo4j
 * brings no protobuf: the plugin's code may read only their compile-time constants (field and
 * enum numbers), which javac copies into its classes. So no class of the jar may use a field or
 * method of theirs, or have one of their types in a signature. (javac also lists the classes whose
 * constants it copied, in entries no instruction uses and the JVM never resolves: allowed.)
 */
class GeneratedConstantsTest {
  /** As types appear in descriptors ({@code Lio/sparkprov/v1/Op;}). */
  private static final String[] OUTSIDE_THE_JAR = {"Lio/sparkprov/v1/", "Lcom/google/protobuf/"};

  @Test
  void noClassOfTheJarNeedsGeneratedCodeOrProtobufAtRunTime() throws Exception {
    Path classes =
        Path.of(Traces.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    Map<String, List<String>> uses = new TreeMap<>();
    List<String> checked = new ArrayList<>();
    try (Stream<Path> files = Files.walk(classes.resolve("io/sparkprov/plugin"))) {
      for (Path file : files.filter(f -> f.toString().endsWith(".class")).toList()) {
        checked.add(file.getFileName().toString());
        List<String> outside = new ArrayList<>();
        for (String type : usedTypes(Files.readAllBytes(file))) {
          for (String prefix : OUTSIDE_THE_JAR) {
            if (type.contains(prefix)) {
              outside.add(type);
            }
          }
        }
        if (!outside.isEmpty()) {
          uses.put(classes.relativize(file).toString(), outside);
        }
      }
    }
    assertTrue(checked.containsAll(List.of("TraceMessage.class", "Schema.class")), "scanned");
    assertEquals(Map.of(), uses);
  }

  /**
   * The types a class file's code depends on at run time, in descriptor form: the classes of the
   * fields and methods it uses, and its texts, among which every descriptor and signature (the
   * types of its fields and methods, and of the members it uses).
   */
  static List<String> usedTypes(byte[] classFile) throws IOException {
    DataInputStream in = new DataInputStream(new ByteArrayInputStream(classFile));
    in.skipBytes(8); // magic, minor and major version
    int count = in.readUnsignedShort();
    String[] utf8 = new String[count];
    int[] className = new int[count];
    List<Integer> memberClasses = new ArrayList<>();
    for (int i = 1; i < count; i++) {
      int tag = in.readUnsignedByte();
      switch (tag) {
        case 1 -> utf8[i] = in.readUTF();
        case 7 -> className[i] = in.readUnsignedShort();
        case 9, 10, 11 -> { // field, method, interface method: class, name and type
          memberClasses.add(in.readUnsignedShort());
          in.readUnsignedShort();
        }
        case 8, 16, 19, 20 -> in.readUnsignedShort(); // string, method type, module, package
        case 3, 4 -> in.readInt();
        case 5, 6 -> { // long and double take two entries
          in.readLong();
          i++;
        }
        case 12, 17, 18 -> in.readInt(); // name and type, (invoke) dynamic
        case 15 -> in.skipBytes(3); // method handle
        default -> throw new IOException("constant pool tag " + tag);
      }
    }
    List<String> types = new ArrayList<>();
    for (int c : memberClasses) {
      types.add("L" + utf8[className[c]] + ";");
    }
    for (String text : utf8) {
      if (text != null) {
        types.add(text);
      }
    }
    return types;
  }
}
